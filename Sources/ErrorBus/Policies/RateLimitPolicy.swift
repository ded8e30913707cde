/// `rateLimited`: wait exactly what the server asked (clamped, plus a little jitter), then send one
/// canary. Without a hint, back off as for `transient`.
package struct RateLimitPolicy<Instant: InstantProtocol>: Equatable where Instant.Duration == Duration {
    typealias Action = PolicyAction<Instant>

    let configuration: ErrorBusConfiguration.RateLimit
    private(set) var backoff: Backoff
    /// When the canary is due.
    private(set) var deadline: Instant?
    /// Whether that is when the server said to come back (not a back-off of our own).
    private(set) var waitsForHint = false

    init(_ configuration: ErrorBusConfiguration.RateLimit, backoff: ErrorBusConfiguration.Backoff) {
        self.configuration = configuration
        self.backoff = Backoff(backoff)
    }

    /// The hint clamped to the configured bounds.
    func clamped(_ hint: Duration) -> Duration {
        min(max(hint, configuration.minimum), configuration.maximum)
    }

    mutating func start(
        at now: Instant,
        retryAfter hint: Duration?,
        using random: inout some RandomNumberGenerator
    ) -> Action {
        let delay: Duration
        waitsForHint = hint != nil
        if let hint {
            // Jitter only ever adds: nothing may reach the server before its hint has passed.
            let jitter = Double.random(in: 0...configuration.jitter, using: &random)
            delay = clamped(hint) * (1 + jitter)
        } else {
            delay = backoff.nextDelay(using: &random)
        }
        let deadline = now.advanced(by: delay)
        self.deadline = deadline
        return .wait(until: deadline, then: .canary)
    }

    /// A later failure joined: a longer hint pushes the canary back, a shorter one changes nothing.
    mutating func joined(
        at now: Instant,
        retryAfter hint: Duration?,
        using random: inout some RandomNumberGenerator
    ) -> Action? {
        guard let hint, let deadline, now.advanced(by: clamped(hint)) > deadline else { return nil }
        return start(at: now, retryAfter: hint, using: &random)
    }

    mutating func stepFinished(
        _ result: StepResult,
        at now: Instant,
        using random: inout some RandomNumberGenerator
    ) -> Action {
        switch result {
        case .succeeded: return .release
        case .failed(_, let hint): return start(at: now, retryAfter: hint, using: &random)
        case .rejected: return start(at: now, retryAfter: nil, using: &random)
        }
    }
}
