/// Exponential back-off with full jitter below the cap: the n-th delay is uniform in
/// `0...base × factorⁿ`; once that reaches `cap`, uniform in `cap/2...cap`.
///
/// Full jitter spreads the first retries of many clients that failed at the same moment; see
/// "Exponential Backoff And Jitter" (AWS Architecture Blog, 2015). At the cap the delay only
/// varies by half: the bus sends one canary per cause, so the cap is the cadence at which an
/// outage's end is noticed, and full jitter there would make that anywhere from at once to a
/// whole cap late, at twice the mean rate of requests. What a long outage costs is bounded by
/// the retry budget every canary draws on, not by the cap.
package struct Backoff: Sendable, Equatable {
    var configuration: ErrorBusConfiguration.Backoff
    /// How many delays have been handed out.
    private(set) var attempts = 0

    package init(_ configuration: ErrorBusConfiguration.Backoff) {
        self.configuration = configuration
    }

    /// The upper bound of the delay for the given attempt (0-based).
    func ceiling(forAttempt attempt: Int) -> Duration {
        let base = configuration.base.seconds
        let cap = configuration.cap.seconds
        // Stop multiplying once past the cap, so huge attempt counts cannot overflow.
        var ceiling = base
        var step = 0
        while step < attempt && ceiling < cap {
            ceiling *= configuration.factor
            step += 1
        }
        return .seconds(min(ceiling, cap))
    }

    /// The next delay: uniform in `0...ceiling(forAttempt: attempts)`, or in `cap/2...cap` once
    /// the ceiling is the cap.
    mutating func nextDelay(using random: inout some RandomNumberGenerator) -> Duration {
        let ceiling = ceiling(forAttempt: attempts).seconds
        attempts += 1
        let floor = ceiling >= configuration.cap.seconds ? ceiling / 2 : 0
        return .seconds(Double.random(in: floor...ceiling, using: &random))
    }

    /// A delay for the given attempt (0-based), drawn as ``nextDelay(using:)`` draws it, without
    /// counting an attempt.
    package func delay(forAttempt attempt: Int, using random: inout some RandomNumberGenerator) -> Duration {
        let ceiling = ceiling(forAttempt: attempt).seconds
        let floor = ceiling >= configuration.cap.seconds ? ceiling / 2 : 0
        return .seconds(Double.random(in: floor...ceiling, using: &random))
    }

    mutating func reset() {
        attempts = 0
    }
}

extension Duration {
    /// The duration in seconds, as a floating-point number.
    var seconds: Double {
        let (seconds, attoseconds) = components
        return Double(seconds) + Double(attoseconds) * 1e-18
    }
}
