/// How many jobs of one scope may run at once, adapting to how the scope answers: additive
/// increase, multiplicative decrease (AIMD), with a slow start, as TCP's congestion control and
/// Vector's adaptive request concurrency do.
///
/// - **Slow start**: the limit starts at ``ErrorBusConfiguration/Concurrency/initial`` and grows by one per success
///   (doubling every round trip) up to the slow-start threshold, the full
///   ``ErrorBusConfiguration/Concurrency/maximum`` at first.
/// - **Additive increase**: past the threshold it grows by `1 / limit` per success (one per round
///   trip).
/// - **Multiplicative decrease**: back-pressure (a `429`, a `503`, a timeout: the caller says
///   which failures are) multiplies the limit by ``ErrorBusConfiguration/Concurrency/decrease``, at most once per
///   round trip, and the threshold drops to the new limit. So does a round trip whose answers
///   were slow: latencies are averaged over windows of one baseline round trip, and a window
///   whose mean exceeds both ``ErrorBusConfiguration/Concurrency/latencyTolerance`` times the baseline and the
///   baseline plus four mean deviations counts as back-pressure. A single slow answer does not
///   (loopback and busy hosts have those); a server's queue filling up does.
/// - **A ceiling learnt from the server**: when the scope says it is overloaded (a `429`, a `503`),
///   the latency it answered with just before is a congested one, whatever the baseline says:
///   for the next ``ceilingRoundTrips`` round trips, a window within a tenth of it counts as
///   congested too. A fleet whose hosts came to the scope already loaded has no unloaded
///   baseline to compare with; the server's shedding tells them where its queue is full.
/// - **Calibrated by canaries**: a canary's latency (see ``calibrate(_:)``) sets or lowers the
///   baseline, so that a daemon that never saw the scope unloaded does not learn a full queue as
///   its normal.
/// - **No increase while held**: while an incident holds the scope, successes do not raise it.
///   When the incident's cause is gone, the limit starts slow again from
///   ``ErrorBusConfiguration/Concurrency/initial``, up to the threshold it had: a fleet whose API came back ramps up
///   instead of arriving at full speed on every host at once.
///
/// The limit never leaves `1...maximum`; one that starts at its maximum and never decreases
/// (``ErrorBusConfiguration/Concurrency/fixed(_:)``) stays there. A pure value: the bus keeps one per scope and feeds
/// it; a simulation can drive it on a clock of its own.
public struct ConcurrencyLimit<Instant: InstantProtocol>: Sendable, Equatable where Instant.Duration == Duration {
    public typealias Configuration = ErrorBusConfiguration.Concurrency

    /// What became of a job that held a slot.
    public enum Outcome: Sendable, Equatable {
        /// It succeeded after `latency`.
        case success(latency: Duration)
        /// The scope said it is overloaded: too many requests, or unavailable for a while (a `429`,
        /// a `503` with `Retry-After`). Back-pressure whose latency marks the scope congested.
        case overloaded
        /// The scope failed in a way that suggests load: a timeout, a `5xx`, a reset.
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
    /// Of ``inFlight``, the jobs whose slot is lent (``lend()``): their runs go on without
    /// weighing on the scope's queue, and count toward the maximum only.
    public private(set) var lent = 0
    /// The baseline latency: an exponentially weighted average of the round trips' mean latencies.
    public private(set) var baseline: Duration?
    /// The baseline's mean deviation, weighted the same way.
    public private(set) var deviation: Duration = .zero
    /// Whether an incident holds the scope: no increase until its cause is gone.
    public private(set) var isHeld = false
    private var window: Window?
    private var lastDecrease: Instant?
    /// The latency the scope answered with when it last said it was overloaded, for
    /// ``ceilingRoundTrips`` round trips: answers within a tenth of it count as congested.
    public private(set) var ceiling: Duration?
    private var roundTripsUnderCeiling = 0
    /// The latest latencies, averaged with a weight of a quarter.
    private var recentLatency: Duration?

    public init(_ configuration: Configuration) {
        self.configuration = configuration
        self.limit = Double(configuration.initial)
        self.slowStartThreshold = Double(configuration.maximum)
    }

    /// How many jobs may hold a slot at once now.
    public var permits: Int { max(1, Int(limit)) }

    /// Whether a slot is free: fewer than ``permits`` jobs hold one that is not lent, and fewer
    /// than the maximum hold one at all.
    public var hasFreeSlot: Bool { inFlight - lent < permits && inFlight < configuration.maximum }

    /// Takes a slot if one is free.
    public mutating func acquire() -> Bool {
        guard hasFreeSlot else { return false }
        inFlight += 1
        return true
    }

    /// A job that holds a slot goes on without weighing on the scope's queue: a long transfer
    /// that the server keeps taking (an upload's body under way for seconds, or paced by a
    /// bandwidth limit) says nothing of how many requests the server can answer at once. Its slot
    /// no longer counts toward the limit, only toward the maximum, so that one long upload
    /// neither holds a slow start at one slot nor keeps the scope's other jobs waiting; give it
    /// back with ``releaseLent(_:at:)``.
    public mutating func lend() {
        if lent < inFlight { lent += 1 }
    }

    /// Gives back a lent slot, with what its job came to: a failure teaches as any other does;
    /// a success neither grows the limit nor teaches the latency (the transfer's length, not
    /// the server's answer).
    public mutating func releaseLent(_ outcome: Outcome, at now: Instant) {
        lent = max(0, lent - 1)
        if case .success = outcome {
            release(.other, at: now)
        } else {
            release(outcome, at: now)
        }
    }

    /// ``releaseLent(_:at:)`` when the slot was lent, ``release(_:at:)`` when not.
    mutating func release(_ outcome: Outcome, at now: Instant, lent: Bool) {
        if lent { releaseLent(outcome, at: now) } else { release(outcome, at: now) }
    }

    /// Gives back a slot, with what the job that held it came to.
    public mutating func release(_ outcome: Outcome, at now: Instant) {
        inFlight = max(0, inFlight - 1)
        switch outcome {
        case .other:
            return
        case .overloaded:
            if let recentLatency {
                ceiling = recentLatency
                roundTripsUnderCeiling = 0
            }
            decrease(at: now)
        case .backPressure:
            decrease(at: now)
        case .success(let latency):
            // Only a fast answer says there is room for more.
            if !isHeld, latency <= latencyThreshold {
                limit += limit < slowStartThreshold ? 1 : 1 / limit
                limit = min(limit, Double(configuration.maximum))
            }
            observe(latency, at: now)
        }
    }

    /// Learns from a latency measured with nothing else of the scope in flight: an incident's
    /// canary, sent alone to a scope that just came back. It is the best sample of the unloaded
    /// latency a daemon that starts in an outage gets: without it, its first baseline would be
    /// whatever a fleet's recovery queues up, and a full queue would pass for normal. It sets
    /// the baseline when there is none and pulls a higher one down; the limit does not move.
    public mutating func calibrate(_ latency: Duration) {
        guard let baseline else {
            baseline = latency
            return
        }
        guard latency < baseline else { return }
        self.baseline = baseline + (latency - baseline) * min(1, configuration.baselineWeight * 4)
    }

    /// An incident now holds the scope: the limit stops growing.
    public mutating func hold() {
        isHeld = true
    }

    /// The cause of the incident that held the scope is gone: start slow again, up to the
    /// threshold.
    public mutating func resume() {
        guard isHeld else { return }
        isHeld = false
        slowStartThreshold = max(slowStartThreshold, limit)
        limit = Double(configuration.initial)
        window = nil
    }

    /// Adds a latency to the current round trip's window; judges the window once it spans a
    /// baseline round trip.
    private mutating func observe(_ latency: Duration, at now: Instant) {
        recentLatency = recentLatency.map { $0 + (latency - $0) * 0.25 } ?? latency
        guard let baseline else {
            baseline = latency
            return
        }
        var window = self.window ?? Window(start: now)
        window.total += latency
        window.count += 1
        guard window.start.duration(to: now) >= baseline else {
            self.window = window
            return
        }
        self.window = nil
        if ceiling != nil {
            roundTripsUnderCeiling += 1
            if roundTripsUnderCeiling >= Self.ceilingRoundTrips { ceiling = nil }
        }
        let mean = window.total / window.count
        let congested = mean > latencyThreshold
        if congested { decrease(at: now) }
        // The baseline is the scope's latency unloaded: a faster round trip pulls it down
        // quickly, a congested one lifts it only slowly (so a queue that stays full keeps
        // counting as one), any other at the usual weight (so a scope that really became
        // slower becomes the new normal).
        // The deviation is the scope's noise, counted up to the baseline itself: a queue that
        // stays full must not pass for noise (and once the scope sheds, the ceiling catches it).
        let weight = configuration.baselineWeight * (mean < baseline ? 4 : congested ? 0.1 : 1)
        let difference = min(mean > baseline ? mean - baseline : baseline - mean, baseline)
        deviation += (difference - deviation) * configuration.baselineWeight
        self.baseline = baseline + (mean - baseline) * min(1, weight)
    }

    /// Whether the latest answers came slow, beyond the tolerance over the baseline (the ceiling
    /// left aside): requests wait in a queue in front of the scope. A refusal then is that queue
    /// overflowing, which this limit answers; it says nothing of a rate (``AdaptiveRate``).
    public var isQueueing: Bool {
        guard let baseline, let recentLatency else { return false }
        return recentLatency > max(baseline * configuration.latencyTolerance, baseline + deviation * 4)
    }

    /// Above this a latency is slow: the tolerance times the baseline, or the baseline plus four
    /// of its mean deviations when it varies that much, but no more than nine tenths of the
    /// ``ceiling``; no bound before there is a baseline.
    private var latencyThreshold: Duration {
        guard let baseline else { return .seconds(Int64.max) }
        let threshold = max(baseline * configuration.latencyTolerance, baseline + deviation * 4)
        guard let ceiling else { return threshold }
        return min(threshold, ceiling * 0.9)
    }

    /// How many round trips the ceiling is kept after the scope last said it was overloaded: the
    /// scope may have become slower for good since.
    public static var ceilingRoundTrips: Int { 100 }

    /// The answers of the round trip under way.
    private struct Window: Sendable, Equatable {
        var start: Instant
        var total = Duration.zero
        var count = 0
    }

    private mutating func decrease(at now: Instant) {
        // Once per round trip: the answers to a burst all report the same overload.
        if let lastDecrease, let baseline, lastDecrease.duration(to: now) < baseline { return }
        limit = max(1, limit * configuration.decrease)
        slowStartThreshold = limit
        lastDecrease = now
    }
}
