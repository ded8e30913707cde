public import ErrorBus
import Synchronization

/// A probe whose answers the test scripts, recording when it was asked.
public final class ScriptedProbe: ReachabilityProbe {
    private struct State {
        var answers: [ProbeResult]
        var otherwise: ProbeResult
        var calls: [ManualClock.Instant] = []
    }

    private let state: Mutex<State>
    private let clock: ManualClock
    /// One element per probe, with the time it was asked.
    public let calls: AsyncStream<ManualClock.Instant>
    private let callsContinuation: AsyncStream<ManualClock.Instant>.Continuation

    /// Answers `answers` in order, then `otherwise` for ever.
    public init(clock: ManualClock, answers: [ProbeResult] = [], otherwise: ProbeResult = .reachable) {
        self.clock = clock
        self.state = Mutex(State(answers: answers, otherwise: otherwise))
        (calls, callsContinuation) = AsyncStream.makeStream()
    }

    public var callTimes: [ManualClock.Instant] { state.withLock { $0.calls } }

    public func probe(_ scope: String, kind: ErrorCategory.Kind) async -> ProbeResult {
        let now = clock.now
        let answer = state.withLock { state in
            state.calls.append(now)
            return state.answers.isEmpty ? state.otherwise : state.answers.removeFirst()
        }
        callsContinuation.yield(now)
        return answer
    }
}
