/// The policy of one incident: the state machine its category calls for.
///
/// Plain values, generic over the clock's instants, no side effects: every input returns the action the bus
/// must carry out, so tests drive each policy with a manual clock and a seeded random source.
package enum IncidentPolicy<Instant: InstantProtocol>: Equatable where Instant.Duration == Duration {
    package typealias Action = PolicyAction<Instant>

    case transient(TransientPolicy<Instant>)
    case rateLimited(RateLimitPolicy<Instant>)
    case unreachable(ReachabilityGate<Instant>)
    case unauthenticated(ReauthenticationPolicy<Instant>)
    /// `invalid`: nothing is retried; the incident only groups same-cause dead letters until no
    /// new one arrived for the grouping window.
    case deadLetters(window: Duration)
    /// `fatal`: the service is paused; with a probe, it resumes by itself once the probe passes.
    case paused(ReachabilityGate<Instant>?)

    package init(for failure: Failure, configuration: ErrorBusConfiguration, canProbe: Bool) {
        switch failure.category {
        case .transient:
            self = .transient(TransientPolicy(configuration.backoff))
        case .rateLimited:
            self = .rateLimited(RateLimitPolicy(configuration.rateLimit, backoff: configuration.backoff))
        case .unreachable:
            self = .unreachable(ReachabilityGate(configuration.reachability, cause: failure.cause))
        case .unauthenticated:
            self = .unauthenticated(ReauthenticationPolicy(backoff: configuration.backoff))
        case .invalid:
            self = .deadLetters(window: configuration.deadLetterGroupingWindow)
        case .fatal:
            self = .paused(canProbe ? ReachabilityGate(configuration.reachability) : nil)
        }
    }

    /// The policy of one job that fails on its own (``ErrorBusConfiguration/Isolation``): the
    /// isolation's back-off between its retries, or the server's hint for a rate limit.
    package init(isolating failure: Failure, configuration: ErrorBusConfiguration) {
        switch failure.category {
        case .rateLimited:
            self = .rateLimited(RateLimitPolicy(configuration.rateLimit, backoff: configuration.isolation.backoff))
        default:
            self = .transient(TransientPolicy(configuration.isolation.backoff))
        }
    }

    /// The incident just opened with `failure`.
    package mutating func start(
        with failure: Failure,
        at now: Instant,
        using random: inout some RandomNumberGenerator
    ) -> Action {
        switch self {
        case .transient(var policy):
            defer { self = .transient(policy) }
            return policy.start(at: now, using: &random)
        case .rateLimited(var policy):
            defer { self = .rateLimited(policy) }
            return policy.start(at: now, retryAfter: failure.category.retryAfter, using: &random)
        case .unreachable(var gate):
            defer { self = .unreachable(gate) }
            return gate.start(at: now, using: &random)
        case .unauthenticated(let policy):
            return policy.start()
        case .deadLetters(let window):
            return .wait(until: now.advanced(by: window), then: .close)
        case .paused(var gate?):
            defer { self = .paused(gate) }
            return gate.start(at: now, using: &random)
        case .paused(nil):
            return .hold
        }
    }

    /// Another failure with the same fingerprint joined while the incident waits. Returns a new
    /// action only when the schedule changes.
    package mutating func joined(
        by failure: Failure,
        at now: Instant,
        using random: inout some RandomNumberGenerator
    ) -> Action? {
        switch self {
        case .rateLimited(var policy):
            defer { self = .rateLimited(policy) }
            return policy.joined(at: now, retryAfter: failure.category.retryAfter, using: &random)
        case .deadLetters(let window):
            return .wait(until: now.advanced(by: window), then: .close)
        case .transient, .unreachable, .unauthenticated, .paused:
            return nil
        }
    }

    /// A step (canary, probe, re-authentication) finished.
    package mutating func stepFinished(
        _ result: StepResult,
        at now: Instant,
        using random: inout some RandomNumberGenerator
    ) -> Action {
        switch self {
        case .transient(var policy):
            defer { self = .transient(policy) }
            return policy.stepFinished(result, at: now, using: &random)
        case .rateLimited(var policy):
            defer { self = .rateLimited(policy) }
            return policy.stepFinished(result, at: now, using: &random)
        case .unreachable(var gate):
            defer { self = .unreachable(gate) }
            return gate.stepFinished(result, at: now, using: &random)
        case .unauthenticated(var policy):
            defer { self = .unauthenticated(policy) }
            return policy.stepFinished(result, at: now, using: &random)
        case .deadLetters:
            return .release
        case .paused(var gate?):
            defer { self = .paused(gate) }
            return gate.stepFinished(result, at: now, using: &random)
        case .paused(nil):
            return result == .succeeded ? .release : .hold
        }
    }

    /// A released job met the same cause again: release stops, the policy starts over.
    package mutating func releaseInterrupted(
        by failure: Failure,
        at now: Instant,
        using random: inout some RandomNumberGenerator
    ) -> Action {
        switch self {
        case .unreachable, .paused(_?):
            // Probing starts again from the first interval: the scope answered a moment ago.
            return start(with: failure, at: now, using: &random)
        case .transient, .rateLimited, .unauthenticated, .deadLetters, .paused(nil):
            let hint = failure.category.retryAfter
            return stepFinished(.failed(reason: failure.cause, retryAfter: hint), at: now, using: &random)
        }
    }

    /// Whether the next canary draws on the retry budget: all do but one the server scheduled
    /// itself with `Retry-After` (or a rate limit's reset). The budget bounds the retries the
    /// client decides on; a server's hint is its own pacing, and a fleet shed by a server that
    /// has room a second later must not wait for tokens that successes have not refilled yet.
    package var canaryDrawsOnBudget: Bool {
        if case .rateLimited(let policy) = self, policy.waitsForHint { return false }
        return true
    }

    /// The host's network configuration changed. Returns an action only for policies that probe.
    func networkChanged(at now: Instant, using random: inout some RandomNumberGenerator) -> Action? {
        switch self {
        case .unreachable(let gate): gate.networkChanged(at: now, using: &random)
        case .transient, .rateLimited, .unauthenticated, .deadLetters, .paused: nil
        }
    }

    /// An operator asked to retry now.
    func operatorRetry() -> Action {
        switch self {
        case .transient, .rateLimited: .now(.canary)
        case .unreachable, .paused(_?): .now(.probe)
        case .unauthenticated: .now(.reauthenticate)
        case .deadLetters, .paused(nil): .release
        }
    }
}

extension ErrorCategory {
    /// The server's hint, for `rateLimited`.
    public var retryAfter: Duration? {
        if case .rateLimited(let hint) = self { hint } else { nil }
    }
}
