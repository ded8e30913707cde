import ErrorBus
import ErrorBusTesting
import Logging

/// The bus's events as a test reads them: wait for the next event of a kind, keep everything seen.
final class EventLog {
    private var iterator: EventSubscription.AsyncIterator
    private(set) var seen: [BusEvent] = []
    let subscription: EventSubscription

    init(_ subscription: EventSubscription) {
        self.subscription = subscription
        self.iterator = subscription.makeAsyncIterator()
    }

    /// Waits for the next event of `kind`, skipping others (they stay in ``seen``).
    @discardableResult
    func next(
        _ kind: BusEvent.Kind,
        isolation: isolated (any Actor)? = #isolation,
        sourceLocation: SourceLocation = #_sourceLocation
    ) async -> BusEvent {
        while let event = await iterator.next(isolation: isolation) {
            seen.append(event)
            if event.kind == kind { return event }
        }
        Issue.record("the event stream ended before \(kind)", sourceLocation: sourceLocation)
        return BusEvent(kind: kind)
    }

    func count(of kind: BusEvent.Kind) -> Int {
        seen.filter { $0.kind == kind }.count
    }
}

import Testing

typealias TestBus = ErrorBus

/// Creates a bus on a manual clock, runs it, hands it to `body` with its clock and event log,
/// and stops it afterwards.
func withRunningBus<Result: Sendable>(
    configuration: ErrorBusConfiguration = .forTests,
    clock: ManualClock = ManualClock(),
    probe: (any ReachabilityProbe)? = nil,
    authenticator: (any Authenticator)? = nil,
    _ body: (TestBus, ManualClock, EventLog) async throws -> Result
) async throws -> Result {
    let bus = ErrorBus(
        configuration: configuration,
        clock: clock,
        probe: probe,
        authenticator: authenticator,
        random: SeededRandomNumberGenerator(seed: 42),
        logger: Logger(label: "errorbus.test", factory: { _ in SwiftLogNoOpLogHandler() })
    )
    let events = EventLog(await bus.subscribe(bufferSize: 1_000_000))
    return try await withThrowingTaskGroup(of: Void.self) { group in
        group.addTask { await bus.run() }
        defer { group.cancelAll() }
        return try await body(bus, clock, events)
    }
}

extension ErrorBusConfiguration {
    /// Defaults, except that releases start without a random delay (which would wait on the
    /// manual clock).
    static var forTests: ErrorBusConfiguration {
        var configuration = ErrorBusConfiguration()
        configuration.release.spread = .zero
        return configuration
    }
}

extension ManualClock.Instant {
    static func seconds(_ seconds: Double) -> ManualClock.Instant {
        ManualClock.Instant(offset: .seconds(seconds))
    }
}
