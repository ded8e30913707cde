/// How many jobs of one scope may run at once, adapting to how the scope answers: additive
/// increase, multiplicative decrease (AIMD), with a slow start, as TCP's congestion control and
/// Vector's adaptive request concurrency do.
///
/// - **Slow start**: the limit starts at ``Configuration/initial`` and grows by one per success
///   (doubling every round trip) up to the slow-start threshold, the full
///   ``Configuration/maximum`` at first.
/// - **Additive increase**: past the threshold it grows by `1 / limit` per success (one per round
///   trip) while answers stay fast.
/// - **Multiplicative decrease**: back-pressure (a `429`, a `503`, a timeout: the caller says
///   which failures are) or a latency above ``Configuration/latencyTolerance`` times the recent
///   baseline multiplies the limit by ``Configuration/decrease``, at most once per baseline round
///   trip, and the threshold drops to the new limit.
/// - **No increase while held**: while an incident holds the scope, successes do not raise it.
///   When the incident resolves, the limit starts slow again from ``Configuration/initial``, up
///   to the threshold it had: a fleet whose API came back ramps up instead of arriving at full
///   speed on every host at once.
///
/// The limit never leaves `1...maximum`. A pure value: the bus keeps one per scope and feeds it.
public struct ConcurrencyLimit<Instant: InstantProtocol>: Sendable, Equatable where Instant.Duration == Duration {
    /// The limiter's parameters.
    public struct Configuration: Sendable, Equatable {
        /// The most jobs of one scope at once (the configured concurrency).
        public var maximum: Int
        /// Where a slow start begins. Default 1.
        public var initial: Int
        /// The factor a decrease multiplies the limit by, above 0 and below 1. Default 0.5.
        public var decrease: Double
        /// A success slower than this times the baseline latency counts as back-pressure.
        /// Default 2.
        public var latencyTolerance: Double
        /// The weight of each new latency in the baseline (an exponentially weighted average of
        /// the latencies of fast answers), above 0 and at most 1. Default 0.05.
        public var baselineWeight: Double

        public init(maximum: Int, initial: Int = 1, decrease: Double = 0.5, latencyTolerance: Double = 2, baselineWeight: Double = 0.05) {
            self.maximum = max(1, maximum)
            self.initial = min(max(1, initial), self.maximum)
            self.decrease = decrease
            self.latencyTolerance = latencyTolerance
            self.baselineWeight = baselineWeight
        }
    }

    /// What became of a job that held a slot.
    public enum Outcome: Sendable, Equatable {
        /// It succeeded after `latency`.
        case success(latency: Duration)
        /// The scope pushed back: too many requests, overloaded, timed out.
        case backPressure
        /// Another failure, which says nothing about load (a rejected payload, a refused
        /// connection that its incident handles).
        case other
    }

    public let configuration: Configuration
    /// The current limit; ``permits`` is its whole part.
    public private(set) var limit: Double
    /// Slow start ends here.
    public private(set) var slowStartThreshold: Double
    /// Jobs holding a slot.
    public private(set) var inFlight = 0
    /// The baseline latency: an exponentially weighted average of the latencies of answers that
    /// came back within the tolerance.
    public private(set) var baseline: Duration?
    /// Whether an incident holds the scope: no increase until it resolves.
    public private(set) var isHeld = false
    private var lastDecrease: Instant?

    public init(_ configuration: Configuration) {
        self.configuration = configuration
        self.limit = Double(configuration.initial)
        self.slowStartThreshold = Double(configuration.maximum)
    }

    /// How many jobs may hold a slot at once now.
    public var permits: Int { max(1, Int(limit)) }

    /// Takes a slot if one is free.
    public mutating func acquire() -> Bool {
        guard inFlight < permits else { return false }
        inFlight += 1
        return true
    }

    /// Gives back a slot, with what the job that held it came to.
    public mutating func release(_ outcome: Outcome, at now: Instant) {
        inFlight = max(0, inFlight - 1)
        switch outcome {
        case .other:
            return
        case .backPressure:
            decrease(at: now)
        case .success(let latency):
            if let baseline, latency > baseline * configuration.latencyTolerance {
                decrease(at: now)
                return
            }
            baseline = baseline.map { $0 + (latency - $0) * configuration.baselineWeight } ?? latency
            guard !isHeld else { return }
            limit += limit < slowStartThreshold ? 1 : 1 / limit
            limit = min(limit, Double(configuration.maximum))
        }
    }

    /// An incident now holds the scope: the limit stops growing.
    public mutating func hold() {
        isHeld = true
    }

    /// The incident that held the scope resolved: start slow again, up to the threshold.
    public mutating func resume() {
        guard isHeld else { return }
        isHeld = false
        slowStartThreshold = max(slowStartThreshold, limit)
        limit = Double(configuration.initial)
    }

    private mutating func decrease(at now: Instant) {
        // Once per round trip: the answers to a burst all report the same overload.
        if let lastDecrease, let baseline, lastDecrease.duration(to: now) < baseline { return }
        limit = max(1, limit * configuration.decrease)
        slowStartThreshold = limit
        lastDecrease = now
    }
}
