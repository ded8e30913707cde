/// `unauthenticated`: sign in again once for the whole realm; rejected credentials wait for an
/// operator; an authenticator that cannot be reached is tried again with back-off.
package struct ReauthenticationPolicy<Instant: InstantProtocol>: Equatable where Instant.Duration == Duration {
    typealias Action = PolicyAction<Instant>

    private(set) var backoff: Backoff

    init(backoff: ErrorBusConfiguration.Backoff) {
        self.backoff = Backoff(backoff)
    }

    func start() -> Action {
        .now(.reauthenticate)
    }

    mutating func stepFinished(
        _ result: StepResult,
        at now: Instant,
        using random: inout some RandomNumberGenerator
    ) -> Action {
        switch result {
        case .succeeded:
            backoff.reset()
            return .release
        case .rejected(let reason):
            return .needsOperator(reason: reason)
        case .failed:
            return .wait(until: now.advanced(by: backoff.nextDelay(using: &random)), then: .reauthenticate)
        }
    }
}
