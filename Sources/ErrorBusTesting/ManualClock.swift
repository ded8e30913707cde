import Synchronization

/// A clock that only moves when a test moves it.
///
/// `sleep(until:)` suspends until ``advance(by:)`` or ``advance(to:)`` passes the deadline, or the
/// sleeping task is cancelled. ``sleepers(atLeast:)`` lets a test wait, without any real sleep, for
/// the code under test to have scheduled its timers before it moves time on.
public final class ManualClock: Clock, Sendable {
    public typealias Duration = Swift.Duration

    public struct Instant: InstantProtocol, CustomStringConvertible {
        public typealias Duration = Swift.Duration

        /// Time since the clock's origin.
        public let offset: Duration

        public init(offset: Duration) {
            self.offset = offset
        }

        public func advanced(by duration: Duration) -> Instant {
            Instant(offset: offset + duration)
        }

        public func duration(to other: Instant) -> Duration {
            other.offset - offset
        }

        public static func < (lhs: Instant, rhs: Instant) -> Bool {
            lhs.offset < rhs.offset
        }

        public var description: String { "t+\(offset)" }
    }

    private struct Sleeper {
        let id: UInt64
        let deadline: Instant
        let continuation: CheckedContinuation<Void, any Error>
    }

    private struct Waiter {
        let id: UInt64
        let count: Int
        let continuation: CheckedContinuation<Void, Never>
    }

    private struct State {
        var now = Instant(offset: .zero)
        var nextID: UInt64 = 0
        var sleepers: [Sleeper] = []
        var waiters: [Waiter] = []
        /// Ids of sleeps and waits cancelled before they were registered.
        var cancelledEarly: Set<UInt64> = []
        /// Ids of sleeps the clock's advance woke whose tasks have not returned from them yet.
        var waking: Set<UInt64> = []

        mutating func takeSatisfiedWaiters() -> [CheckedContinuation<Void, Never>] {
            let count = sleepers.count
            let ready = waiters.filter { $0.count <= count }.map(\.continuation)
            waiters.removeAll { $0.count <= count }
            return ready
        }
    }

    private let state = Mutex(State())

    public init() {}

    public var now: Instant { state.withLock { $0.now } }

    public var minimumResolution: Duration { .nanoseconds(1) }

    /// The number of tasks currently sleeping on this clock.
    public var sleeperCount: Int { state.withLock { $0.sleepers.count } }

    /// The earliest deadline any task is sleeping until, if any.
    public var nextDeadline: Instant? { state.withLock { $0.sleepers.map(\.deadline).min() } }

    /// How many tasks an advance woke that have not yet returned from their sleep: while any has
    /// not, what it does next (at the instant it woke at) has not happened yet. A test that moves
    /// time step by step waits for none before it looks again.
    public var wakingCount: Int { state.withLock { $0.waking.count } }

    public func sleep(until deadline: Instant, tolerance: Duration? = nil) async throws {
        try Task.checkCancellation()
        let id = state.withLock { state in
            defer { state.nextID += 1 }
            return state.nextID
        }
        // Returned from (woken, cancelled or not), it no longer counts as waking.
        defer { _ = state.withLock { $0.waking.remove(id) } }
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
                let (resumeNow, ready) = state.withLock { state -> (Result<Void, any Error>?, [CheckedContinuation<Void, Never>]) in
                    if state.cancelledEarly.remove(id) != nil { return (.failure(CancellationError()), []) }
                    if deadline <= state.now { return (.success(()), []) }
                    state.sleepers.append(Sleeper(id: id, deadline: deadline, continuation: continuation))
                    return (nil, state.takeSatisfiedWaiters())
                }
                if let resumeNow { continuation.resume(with: resumeNow) }
                for waiter in ready { waiter.resume() }
            }
        } onCancel: {
            let sleeper: Sleeper? = state.withLock { state in
                guard let index = state.sleepers.firstIndex(where: { $0.id == id }) else {
                    state.cancelledEarly.insert(id)
                    return nil
                }
                return state.sleepers.remove(at: index)
            }
            sleeper?.continuation.resume(throwing: CancellationError())
        }
    }

    /// Moves time forward and wakes every sleeper whose deadline has passed, earliest first.
    public func advance(by duration: Duration) {
        advance(to: now.advanced(by: duration))
    }

    /// Moves time to `instant` (never backwards) and wakes every sleeper whose deadline has passed.
    public func advance(to instant: Instant) {
        let due: [Sleeper] = state.withLock { state in
            state.now = max(state.now, instant)
            let now = state.now
            let due = state.sleepers.filter { $0.deadline <= now }.sorted { $0.deadline < $1.deadline }
            state.sleepers.removeAll { $0.deadline <= now }
            state.waking.formUnion(due.map(\.id))
            return due
        }
        for sleeper in due { sleeper.continuation.resume() }
    }

    /// Moves time to the earliest pending deadline and wakes its sleepers; returns that instant.
    @discardableResult
    public func advanceToNextDeadline() -> Instant? {
        guard let deadline = nextDeadline else { return nil }
        advance(to: deadline)
        return deadline
    }

    /// Suspends until at least `count` tasks are sleeping on this clock, or the waiting task is
    /// cancelled (a test's time limit ends a wait for timers nothing will set).
    public func sleepers(atLeast count: Int) async {
        let id = state.withLock { state in
            defer { state.nextID += 1 }
            return state.nextID
        }
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                let satisfied = state.withLock { state in
                    if state.sleepers.count >= count || state.cancelledEarly.remove(id) != nil { return true }
                    state.waiters.append(Waiter(id: id, count: count, continuation: continuation))
                    return false
                }
                if satisfied { continuation.resume() }
            }
        } onCancel: {
            let waiter = state.withLock { state in
                guard let index = state.waiters.firstIndex(where: { $0.id == id }) else {
                    state.cancelledEarly.insert(id)
                    return nil as Waiter?
                }
                return state.waiters.remove(at: index)
            }
            waiter?.continuation.resume()
        }
    }
}
