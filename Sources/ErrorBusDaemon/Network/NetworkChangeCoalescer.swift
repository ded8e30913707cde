import ErrorBus
import Synchronization

/// Runs a ``NetworkChangeDebouncer`` on a clock: notifications are recorded from the reading
/// side as they arrive, and ``run(onChange:)`` calls back once per finished burst.
///
/// One callback at a time: notifications that arrive while it runs form the next burst.
final class NetworkChangeCoalescer: Sendable {
    private let clock: Timeline
    private let debouncer: Mutex<NetworkChangeDebouncer>
    /// Wakes ``run(onChange:)`` when a burst may have started; one pending wake-up is enough.
    private let wakeUps: AsyncStream<Void>
    private let wakeUp: AsyncStream<Void>.Continuation

    init(quiet: Duration, maximumDelay: Duration, clock: Timeline) {
        self.clock = clock
        debouncer = Mutex(NetworkChangeDebouncer(quiet: quiet, maximumDelay: maximumDelay))
        (wakeUps, wakeUp) = AsyncStream.makeStream(of: Void.self, bufferingPolicy: .bufferingNewest(1))
    }

    deinit {
        wakeUp.finish()
    }

    /// Notifications arrived now.
    func record(_ change: NetworkChange) {
        let now = clock.now()
        debouncer.withLock { $0.record(change, at: now) }
        wakeUp.yield()
    }

    /// Calls `onChange` once per burst until cancelled (then throws `CancellationError`).
    func run(onChange: @Sendable (NetworkChange) async -> Void) async throws {
        for await _ in wakeUps {
            while let deadline = debouncer.withLock({ $0.deadline }) {
                try await clock.sleep(deadline)
                let now = clock.now()
                if let change = debouncer.withLock({ $0.takeFinished(at: now) }) {
                    await onChange(change)
                }
            }
        }
        try Task.checkCancellation()
    }
}
