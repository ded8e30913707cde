/// `transient`: incident-level exponential back-off with full jitter, one canary per step.
package struct TransientPolicy<Instant: InstantProtocol>: Equatable where Instant.Duration == Duration {
    typealias Action = PolicyAction<Instant>

    private(set) var backoff: Backoff

    init(_ configuration: ErrorBusConfiguration.Backoff) {
        backoff = Backoff(configuration)
    }

    mutating func start(at now: Instant, using random: inout some RandomNumberGenerator) -> Action {
        .wait(until: now.advanced(by: backoff.nextDelay(using: &random)), then: .canary)
    }

    mutating func stepFinished(
        _ result: StepResult,
        at now: Instant,
        using random: inout some RandomNumberGenerator
    ) -> Action {
        switch result {
        case .succeeded: .release
        case .failed, .rejected: .wait(until: now.advanced(by: backoff.nextDelay(using: &random)), then: .canary)
        }
    }
}
