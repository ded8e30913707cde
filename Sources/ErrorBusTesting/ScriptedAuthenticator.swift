public import ErrorBus
import Synchronization

/// An authenticator that counts its calls, answers what the test scripts and can be held until
/// the test lets it answer.
public final class ScriptedAuthenticator: Authenticator {
    private struct State {
        var answers: [ReauthenticationResult]
        var otherwise: ReauthenticationResult
        var calls = 0
        var gates: [CheckedContinuation<Void, Never>] = []
        var held: Bool
    }

    private let state: Mutex<State>
    /// Called after every `.renewed` answer, e.g. to switch the fake API to the new token.
    private let onRenewed: @Sendable () -> Void
    /// One element per re-authentication as it starts: its number, from 1.
    public let started: AsyncStream<Int>
    private let startedContinuation: AsyncStream<Int>.Continuation

    public init(
        answers: [ReauthenticationResult] = [],
        otherwise: ReauthenticationResult = .renewed,
        held: Bool = false,
        onRenewed: @escaping @Sendable () -> Void = {}
    ) {
        state = Mutex(State(answers: answers, otherwise: otherwise, held: held))
        self.onRenewed = onRenewed
        (started, startedContinuation) = AsyncStream.makeStream()
    }

    public var callCount: Int { state.withLock { $0.calls } }

    /// Lets every held re-authentication answer, and later ones answer at once.
    public func letAnswer() {
        let gates = state.withLock { state in
            state.held = false
            defer { state.gates.removeAll() }
            return state.gates
        }
        for gate in gates { gate.resume() }
    }

    public func reauthenticate(realm: String) async -> ReauthenticationResult {
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
