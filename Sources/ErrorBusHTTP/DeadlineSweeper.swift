import NIOCore
import NIOPosix
import Synchronization

/// Calls each registered action once its deadline has passed, unless it was removed first, with
/// one event-loop timer for them all.
///
/// Every answer body errorbusd reads is bounded by a deadline that it almost always meets. A
/// timer of its own per body, scheduled and then cancelled from a pool thread, woke an event
/// loop twice per request; such timers (AsyncHTTPClient's and these) were about 5 % of
/// errorbusd's CPU at upload rate (`perf`). Here
/// adding and removing a deadline is a dictionary change under a lock, and the timer fires at
/// the earliest deadline registered, then at the earliest still waiting: with every request's
/// deadline 30 s ahead, about once per 30 s.
final class DeadlineSweeper: Sendable {
    /// The sweeper of the process's bounded answer bodies, on one of NIO's singleton loops.
    static let shared = DeadlineSweeper(eventLoop: MultiThreadedEventLoopGroup.singleton.next())

    /// A registered deadline, to remove it.
    struct Token: Hashable, Sendable {
        fileprivate let serial: UInt64
    }

    private struct Entry {
        let deadline: NIODeadline
        let action: @Sendable () -> Void
    }

    private struct State {
        var entries: [Token: Entry] = [:]
        var serial: UInt64 = 0
        /// The earliest time a scheduled timer fires; every waiting entry's deadline is at or
        /// after it.
        var armed: NIODeadline?
    }

    private let eventLoop: any EventLoop
    private let state = Mutex(State())

    init(eventLoop: any EventLoop) {
        self.eventLoop = eventLoop
    }

    /// Calls `action` (on the event loop) once `deadline` has passed, unless ``remove(_:)`` came
    /// first.
    func add(_ deadline: NIODeadline, _ action: @escaping @Sendable () -> Void) -> Token {
        let (token, arm) = state.withLock { state in
            state.serial += 1
            let token = Token(serial: state.serial)
            state.entries[token] = Entry(deadline: deadline, action: action)
            if let armed = state.armed, armed <= deadline { return (token, false) }
            state.armed = deadline
            return (token, true)
        }
        if arm { schedule(deadline) }
        return token
    }

    /// Forgets a deadline; its action is not called unless it already was.
    func remove(_ token: Token) {
        state.withLock { _ = $0.entries.removeValue(forKey: token) }
    }

    /// How many deadlines are waiting.
    var count: Int { state.withLock { $0.entries.count } }

    private func schedule(_ deadline: NIODeadline) {
        eventLoop.scheduleTask(deadline: deadline) { self.sweep() }
    }

    /// Runs the actions whose deadline has passed and arms the timer for the earliest left.
    private func sweep() {
        let now = eventLoop.now
        let (due, next) = state.withLock { state -> ([Entry], NIODeadline?) in
            let dueTokens = state.entries.compactMap { $0.value.deadline <= now ? $0.key : nil }
            let due = dueTokens.compactMap { state.entries.removeValue(forKey: $0) }
            // A timer armed for later than now is still to come, and covers what is left.
            if let armed = state.armed, armed > now { return (due, nil) }
            state.armed = state.entries.values.lazy.map(\.deadline).min()
            return (due, state.armed)
        }
        if let next { schedule(next) }
        for entry in due { entry.action() }
    }
}
