import Synchronization

/// The deadlines of the runs under way (``ErrorBusConfiguration/attemptTimeout``), with one
/// timer for them all: each run's deadline is an entry added when it starts and removed when it
/// ends, a dictionary change under a lock; the bus sleeps until the earliest (a `Work` item) and
/// then expires what is due.
///
/// A task group with a sleeping child beside each run did the same at 7–10 µs a run, more than
/// the bus's own cost of a failing run; a run almost always ends long before its deadline, and
/// with every deadline the same limit ahead, the timer fires about once per limit.
final class AttemptDeadlines: Sendable {
    struct Token: Hashable, Sendable {
        fileprivate let serial: UInt64
    }

    private struct Entry {
        let deadline: TimelineInstant
        let expire: @Sendable () -> Void
    }

    private struct State {
        var entries: [Token: Entry] = [:]
        var serial: UInt64 = 0
        /// When the timer armed fires; every entry's deadline is at or after it.
        var armed: TimelineInstant?
    }

    private let state = Mutex(State())

    /// Calls `expire` once `deadline` has passed, unless ``remove(_:)`` came first. Returns the
    /// token, and the deadline to arm the timer for when no timer fires soon enough.
    func add(_ deadline: TimelineInstant, _ expire: @escaping @Sendable () -> Void) -> (Token, arm: TimelineInstant?) {
        state.withLock { state in
            state.serial &+= 1
            let token = Token(serial: state.serial)
            state.entries[token] = Entry(deadline: deadline, expire: expire)
            if let armed = state.armed, armed <= deadline { return (token, nil) }
            state.armed = deadline
            return (token, deadline)
        }
    }

    /// Forgets a deadline; its action is not called unless it already was.
    func remove(_ token: Token) {
        state.withLock { _ = $0.entries.removeValue(forKey: token) }
    }

    /// The timer armed for `deadline` fired at `now`: expires what is due, and returns when to
    /// arm the timer next (`nil`: another timer is armed, or nothing waits).
    func fired(armedFor deadline: TimelineInstant, at now: TimelineInstant) -> TimelineInstant? {
        let (due, next) = state.withLock { state -> ([Entry], TimelineInstant?) in
            // A timer overtaken by an earlier one leaves the sweeping to it.
            guard state.armed == deadline else { return ([], nil) }
            let dueTokens = state.entries.compactMap { $0.value.deadline <= now ? $0.key : nil }
            let due = dueTokens.compactMap { state.entries.removeValue(forKey: $0) }
            state.armed = state.entries.values.lazy.map(\.deadline).min()
            return (due, state.armed)
        }
        for entry in due { entry.expire() }
        return next
    }

    /// How many runs have a deadline waiting.
    var count: Int { state.withLock { $0.entries.count } }
}

/// Which of a run and its deadline ended first: the first decides (a run that ended in time
/// stands though the deadline passed before anyone looked).
final class AttemptRace: Sendable {
    private enum State { case running, finished, expired }
    private let state = Mutex(State.running)

    /// The run ended; whether it was in time.
    @discardableResult
    func finish() -> Bool {
        state.withLock { state in
            guard state == .running else { return state == .finished }
            state = .finished
            return true
        }
    }

    /// The deadline passed; whether the run was still going (then it is cancelled).
    func expire() -> Bool {
        state.withLock { state in
            guard state == .running else { return false }
            state = .expired
            return true
        }
    }

    var expired: Bool { state.withLock { $0 == .expired } }
}
