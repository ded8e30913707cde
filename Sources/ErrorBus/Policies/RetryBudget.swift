/// The process-wide retry budget: a token bucket in the spirit of gRPC's retry throttling and the
/// AWS SDK's retry quota.
///
/// Every success adds ``ErrorBusConfiguration/RetryBudget/successRatio`` of a token, time adds
/// ``ErrorBusConfiguration/RetryBudget/floorPerMinute`` tokens a minute, the bucket holds at most
/// ``ErrorBusConfiguration/RetryBudget/capacity``, and every retry the bus adds on top of first
/// attempts (canaries, `retry` evaluations) costs one token, or, when the run it repeats failed
/// after more than a second, a token per second of it (``price(ofRetryAfterRun:)``: a large upload
/// cut half way costs its bytes at the link's speed), at most the whole bucket. So retries can
/// never add more than a fixed fraction of recent successes, plus a small floor that keeps
/// recovery possible when nothing succeeds.
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

    /// What a retry costs in tokens when the run it repeats failed after `run`: one, or a token
    /// per second of the run, at most the bucket's capacity (so that it can be paid).
    package func price(ofRetryAfterRun run: Duration) -> Double {
        min(configuration.capacity, max(1, run.seconds))
    }

    /// Takes one token for a retry, if there is one.
    package mutating func withdraw(at now: Instant) -> Bool {
        withdraw(at: now, price: 1)
    }

    /// Takes `price` tokens for a retry, if there are as many.
    package mutating func withdraw(at now: Instant, price: Double) -> Bool {
        refill(at: now)
        // At the instant `nextToken(after:)` named, the refill can fall short of a whole token by
        // a rounding error; a timer set for that instant must find its token there.
        guard tokens >= price - Self.rounding else { return false }
        tokens = max(0, tokens - price)
        return true
    }

    /// Computed: a generic type has no static stored properties.
    private static var rounding: Double { 1e-9 }

    /// When the floor refill alone will have produced a whole token.
    package func nextToken(after now: Instant) -> Instant {
        nextToken(after: now, price: 1)
    }

    /// When the floor refill alone will have produced `price` tokens.
    package func nextToken(after now: Instant, price: Double) -> Instant {
        let missing = max(0, price - tokens)
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
