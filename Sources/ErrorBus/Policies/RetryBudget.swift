/// The process-wide retry budget: a token bucket in the spirit of gRPC's retry throttling and the
/// AWS SDK's retry quota.
///
/// Every success adds ``ErrorBusConfiguration/RetryBudget/successRatio`` of a token, time adds
/// ``ErrorBusConfiguration/RetryBudget/floorPerMinute`` tokens a minute, the bucket holds at most
/// ``ErrorBusConfiguration/RetryBudget/capacity``, and every retry the bus adds on top of first
/// attempts (canaries, `retry` evaluations) costs one token. So retries can never add more than a
/// fixed fraction of recent successes, plus a small floor that keeps recovery possible when
/// nothing succeeds.
package struct RetryBudget<Instant: InstantProtocol>: Equatable where Instant.Duration == Duration {
    let configuration: ErrorBusConfiguration.RetryBudget
    package private(set) var tokens: Double
    private var refilledAt: Instant

    package init(_ configuration: ErrorBusConfiguration.RetryBudget, at now: Instant) {
        self.configuration = configuration
        self.tokens = min(configuration.capacity, configuration.floorPerMinute)
        self.refilledAt = now
    }

    /// Credits successful operations.
    package mutating func deposit(successes: Int) {
        guard successes > 0 else { return }
        tokens = min(configuration.capacity, tokens + configuration.successRatio * Double(successes))
    }

    /// Takes one token for a retry, if there is one.
    package mutating func withdraw(at now: Instant) -> Bool {
        refill(at: now)
        // At the instant `nextToken(after:)` named, the refill can fall short of a whole token by
        // a rounding error; a timer set for that instant must find its token there.
        guard tokens >= 1 - Self.rounding else { return false }
        tokens = max(0, tokens - 1)
        return true
    }

    /// Computed: a generic type has no static stored properties.
    private static var rounding: Double { 1e-9 }

    /// When the floor refill alone will have produced a whole token.
    package func nextToken(after now: Instant) -> Instant {
        let missing = max(0, 1 - tokens)
        let perSecond = configuration.floorPerMinute / 60
        return now.advanced(by: .seconds(missing / perSecond))
    }

    private mutating func refill(at now: Instant) {
        let elapsed = refilledAt.duration(to: now)
        guard elapsed > .zero else { return }
        tokens = min(configuration.capacity, tokens + configuration.floorPerMinute / 60 * elapsed.seconds)
        refilledAt = now
    }
}
