import ErrorBus
import ErrorBusTesting
import Synchronization

/// A probe whose answers the test scripts, recording when it was asked.
final class ScriptedProbe: ReachabilityProbe {
    private struct State {
        var answers: [ProbeResult]
        var otherwise: ProbeResult
        var calls: [ManualClock.Instant] = []
    }

    private let state: Mutex<State>
    private let clock: ManualClock
    /// One element per probe, with the time it was asked.
    let calls: AsyncStream<ManualClock.Instant>
    private let callsContinuation: AsyncStream<ManualClock.Instant>.Continuation

    /// Answers `answers` in order, then `otherwise` for ever.
    init(clock: ManualClock, answers: [ProbeResult] = [], otherwise: ProbeResult = .reachable) {
        self.clock = clock
        self.state = Mutex(State(answers: answers, otherwise: otherwise))
        (calls, callsContinuation) = AsyncStream.makeStream()
    }

    var callTimes: [ManualClock.Instant] { state.withLock { $0.calls } }

    func probe(_ scope: String, kind: ErrorCategory.Kind) async -> ProbeResult {
        let now = clock.now
        let answer = state.withLock { state in
            state.calls.append(now)
            return state.answers.isEmpty ? state.otherwise : state.answers.removeFirst()
        }
        callsContinuation.yield(now)
        return answer
    }
}

/// An authenticator that counts its calls, answers what the test scripts and can be held until
/// the test lets it answer.
final class ScriptedAuthenticator: Authenticator {
    private struct State {
        var answers: [ReauthenticationResult]
        var otherwise: ReauthenticationResult
        var calls = 0
        var gates: [CheckedContinuation<Void, Never>] = []
        var held: Bool
    }

    private let state: Mutex<State>
    /// Called after every answer, e.g. to switch the fake API to the new token.
    private let onRenewed: @Sendable () -> Void
    let started: AsyncStream<Int>
    private let startedContinuation: AsyncStream<Int>.Continuation

    init(
        answers: [ReauthenticationResult] = [],
        otherwise: ReauthenticationResult = .renewed,
        held: Bool = false,
        onRenewed: @escaping @Sendable () -> Void = {}
    ) {
        state = Mutex(State(answers: answers, otherwise: otherwise, held: held))
        self.onRenewed = onRenewed
        (started, startedContinuation) = AsyncStream.makeStream()
    }

    var callCount: Int { state.withLock { $0.calls } }

    /// Lets every held re-authentication answer, and later ones answer at once.
    func letAnswer() {
        let gates = state.withLock { state in
            state.held = false
            defer { state.gates.removeAll() }
            return state.gates
        }
        for gate in gates { gate.resume() }
    }

    func reauthenticate(realm: String) async -> ReauthenticationResult {
        let call = state.withLock { state in
            state.calls += 1
            return state.calls
        }
        startedContinuation.yield(call)
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let wait = state.withLock { state in
                if state.held { state.gates.append(continuation) }
                return state.held
            }
            if !wait { continuation.resume() }
        }
        let answer = state.withLock { state in
            state.answers.isEmpty ? state.otherwise : state.answers.removeFirst()
        }
        if answer == .renewed { onRenewed() }
        return answer
    }
}

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
