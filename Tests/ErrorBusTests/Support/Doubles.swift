import ErrorBus
import ErrorBusTesting
import Synchronization

/// A responder that passes every failure on and tells the test when it has seen `target` of them.
///
/// Responders run on the bus in the same turn that routes the failure, so once it has seen a
/// failure, that failure has joined its incident before anything else happens on the bus.
final class FailureCounter: ErrorResponder {
    private struct State {
        var count = 0
        var target: Int
        var waiter: CheckedContinuation<Void, Never>?
    }

    private let state: Mutex<State>

    init(target: Int) {
        state = Mutex(State(target: target))
    }

    var count: Int { state.withLock { $0.count } }

    func respond(to failure: Failure, job: Job?) -> ResponderAnswer {
        let waiter = state.withLock { state -> CheckedContinuation<Void, Never>? in
            state.count += 1
            guard state.count >= state.target else { return nil }
            defer { state.waiter = nil }
            return state.waiter
        }
        waiter?.resume()
        return .pass
    }

    /// Waits until `target` failures were seen.
    func reached() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let done = state.withLock { state in
                if state.count >= state.target { return true }
                state.waiter = continuation
                return false
            }
            if done { continuation.resume() }
        }
    }
}

/// Lets `count` concurrent operations in, then releases them all at once, so that their
/// failures really are concurrent.
final class Barrier: Sendable {
    private struct State {
        var arrived = 0
        var waiters: [CheckedContinuation<Void, Never>] = []
    }

    private let count: Int
    private let state = Mutex(State())

    init(count: Int) {
        self.count = count
    }

    func arriveAndWait() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let release = state.withLock { state -> [CheckedContinuation<Void, Never>] in
                state.arrived += 1
                state.waiters.append(continuation)
                guard state.arrived >= count else { return [] }
                defer { state.waiters.removeAll() }
                return state.waiters
            }
            for waiter in release { waiter.resume() }
        }
    }
}

/// A counter shared with operations.
final class Counter: Sendable {
    private let value = Atomic<Int>(0)

    var count: Int { value.load(ordering: .relaxed) }

    @discardableResult
    func increment() -> Int {
        value.add(1, ordering: .relaxed).newValue
    }

    func decrement() {
        value.subtract(1, ordering: .relaxed)
    }
}

/// A flag shared with operations, e.g. "the API is down".
final class Flag: Sendable {
    private let value: Atomic<Bool>

    init(_ initial: Bool) {
        value = Atomic(initial)
    }

    var isSet: Bool { value.load(ordering: .relaxed) }

    func set(_ newValue: Bool) {
        value.store(newValue, ordering: .relaxed)
    }
}
