/// Exponential back-off with full jitter: the n-th delay is uniform in `0...min(cap, base × factorⁿ)`.
///
/// Full jitter (rather than equal or no jitter) spreads the retries of many clients that failed
/// at the same moment; see "Exponential Backoff And Jitter" (AWS Architecture Blog, 2015).
struct Backoff: Sendable, Equatable {
    var configuration: ErrorBusConfiguration.Backoff
    /// How many delays have been handed out.
    private(set) var attempts = 0

    init(_ configuration: ErrorBusConfiguration.Backoff) {
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

    /// The next delay: uniform in `0...ceiling(forAttempt: attempts)`.
    mutating func nextDelay(using random: inout some RandomNumberGenerator) -> Duration {
        let ceiling = ceiling(forAttempt: attempts).seconds
        attempts += 1
        return .seconds(Double.random(in: 0...ceiling, using: &random))
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
