/// How many requests a second one scope is sent, learnt from its refusals and from what it says of
/// its quota: the rate beside the ``ConcurrencyLimit``.
///
/// A limit on how many requests are in flight cannot see a limit on how many arrive each second:
/// with answers in a millisecond, one request at a time is already hundreds a second. So each
/// scope also has a rate, a token bucket one token deep (requests are spaced evenly, never sent in
/// bursts), which is off until the scope first says it is overloaded:
///
/// - **A refusal** (`429`, `503`: ``ConcurrencyLimit/Outcome/overloaded``) cuts the rate to
///   ``ErrorBusConfiguration/Pacing/decrease`` times what was being sent (at most what was
///   allowed; once the rate is on, what the scope took in, when that was less than half of it),
///   once per refusal of a request sent at least one
///   ``ErrorBusConfiguration/Pacing/measurement`` after the last cut: the refusals of requests
///   sent before the cut took effect say nothing new.
/// - **Successes** grow it back along a cubic curve, as TCP CUBIC and the AWS SDKs' adaptive retry
///   mode do: fast while far below the rate it was cut from, flat around it, then probing beyond.
///   The time the curve takes to come back is long enough for
///   ``ErrorBusConfiguration/Pacing/cycleRequests`` requests at that rate (within
///   ``ErrorBusConfiguration/Pacing/shortestCycle`` and ``ErrorBusConfiguration/Pacing/longestCycle``),
///   so a host meets about one refusal per that many requests, however fast or slow the scope.
///   It never grows beyond twice what the host has been sending: a host with little to send does
///   not earn a rate it never tried.
/// - **A quota the server states** (the `RateLimit`, `RateLimit-Policy` or `X-RateLimit-*` fields:
///   so many requests left until a reset) caps the rate at this host's share of what remains,
///   spread over the time left: a quota is spent evenly over its window, not at its start. A
///   fleet sharing one quota learns each host's share from how fast the remaining count falls
///   between its own answers, so that together the hosts spend what remains evenly too.
/// - **Quiet**: after three cycles of the curve without a refusal, or
///   ``ErrorBusConfiguration/Pacing/quiet`` if that is sooner, the rate is off
///   again.
///
/// A pure value, generic over the clock's instants: the bus keeps one per scope; a simulation can
/// drive it on a clock of its own.
public struct AdaptiveRate<Instant: InstantProtocol>: Sendable, Equatable where Instant.Duration == Duration {
    public typealias Configuration = ErrorBusConfiguration.Pacing

    public let configuration: Configuration
    /// The rate learnt from refusals, in requests per second; `nil` while it is off.
    public private(set) var learnt: Double?
    /// What was being sent when the rate was last cut, which the cubic curve comes back to.
    private var lastMaximum = 0.0
    /// When the rate was last cut.
    private var cutAt: Instant?
    /// The cubic curve's constant for the current cycle: `lastMaximum × (1 − decrease) / cycle³`.
    private var cubic = 0.0
    /// The time the curve takes to come back to `lastMaximum`, in seconds.
    private var cycle = 0.0

    /// The tokens in the bucket (at most one).
    private var tokens = 1.0
    private var refilledAt: Instant?

    /// What this host has been sending, and what of it the scope took in (answered without
    /// refusing it), in requests per second; and the counts of the interval under way.
    public private(set) var measured = 0.0
    public private(set) var measuredAnswered = 0.0
    private var intervalStart: Instant?
    private var intervalSends = 0
    private var intervalAnswered = 0
    /// Whether an incident holds the scope: nothing sent meanwhile is measured.
    private var isHeld = false

    /// What the scope last said of its quota, and what this host made of it.
    private var quota: Quota?
    /// This host's share of the quota's consumption (1: alone).
    public private(set) var quotaShare = 1.0

    private struct Quota: Sendable, Equatable {
        var remaining: Int
        var resetAt: Instant
        /// The rate this host may use until `resetAt`.
        var rate: Double
        /// Answers of this host, and the quota they saw consumed, since the share was last sampled.
        var answers = 0
        var consumed = 0
    }

    public init(_ configuration: Configuration) {
        self.configuration = configuration
    }

    /// The rate in force at `now`, in requests per second: the learnt one, capped by the quota's
    /// until its reset; `nil` when neither limits the scope.
    public func limit(at now: Instant) -> Double? {
        let quotaRate = quota.flatMap { now < $0.resetAt ? $0.rate : nil }
        switch (learnt, quotaRate) {
        case (nil, nil): return nil
        case (let rate?, nil): return rate
        case (nil, let rate?): return rate
        case (let learnt?, let quota?): return min(learnt, quota)
        }
    }

    /// Takes a token for a request sent at `now`. Returns `nil` when the request may go, or when
    /// the next token is due: the request waits until then and asks again.
    public mutating func take(at now: Instant) -> Instant? {
        guard let rate = limit(at: now) else {
            refilledAt = nil
            sent(at: now)
            return nil
        }
        if let refilledAt {
            tokens = min(1, tokens + rate * refilledAt.duration(to: now).seconds)
        } else {
            tokens = 1
        }
        refilledAt = now
        if tokens >= 1 - 1e-9 {
            tokens -= 1
            sent(at: now)
            return nil
        }
        guard rate > 0 else {
            // A spent quota: nothing before its reset.
            return quota?.resetAt ?? now.advanced(by: configuration.longestCycle)
        }
        var due = now.advanced(by: .seconds((1 - tokens) / rate))
        // A quota's rate ends with its window: ask again then.
        if let quota, quota.resetAt > now { due = min(due, quota.resetAt) }
        return due
    }

    /// An incident holds the scope at `now`: what was measured until now is kept, and what is
    /// sent while it holds (a canary every few seconds) says nothing of what the host sends when
    /// it may, so it is not measured until ``resume(at:)``.
    public mutating func hold(at now: Instant) {
        if !isHeld, let start = intervalStart, intervalSends > 0 || intervalAnswered > 0 {
            let elapsed = max(start.duration(to: now), configuration.measurement / 2)
            fold(elapsed)
        }
        isHeld = true
        intervalStart = nil
        intervalSends = 0
        intervalAnswered = 0
    }

    /// Nothing holds the scope any more at `now`: what it is sent is measured again, from now.
    public mutating func resume(at now: Instant) {
        isHeld = false
        intervalStart = nil
        intervalSends = 0
        intervalAnswered = 0
    }

    /// The scope took a request in at `now`, failing it or not, without refusing it for load.
    public mutating func answered(at now: Instant) {
        guard !isHeld else { return }
        roll(at: now)
        intervalAnswered += 1
    }

    /// A request succeeded at `now`: the learnt rate grows along its curve.
    public mutating func succeeded(at now: Instant) {
        answered(at: now)
        guard learnt != nil, let cutAt else { return }
        let elapsed = cutAt.duration(to: now).seconds
        if elapsed >= min(configuration.quiet.seconds, Self.quietCycles * cycle) {
            learnt = nil
            return
        }
        let offset = elapsed - cycle
        let curve = lastMaximum + cubic * offset * offset * offset
        let bound = max(2 * sendRate(at: now), configuration.minimum)
        learnt = max(configuration.minimum, min(curve, bound))
    }

    /// A request sent at `sentAt` was refused at `now` because the scope is overloaded: the rate
    /// is cut, unless it already was after the request left.
    public mutating func refused(sentAt: Instant, at now: Instant) {
        guard configuration.adaptsRate else { return }
        // A request sent before the last cut took effect says nothing new: the scope's bucket or
        // queue was still emptying from before it.
        if let cutAt, sentAt < cutAt.advanced(by: configuration.measurement) { return }
        let allowed = limit(at: now)
        // What was being sent, at most what was allowed; or, when the scope took in less than
        // half of it (a burst far beyond what it serves), what it took in. Nothing measured (the
        // refusal of a host that has not sent since it was held): nothing to cut from.
        var base = sendRate(at: now)
        if base <= 0 { base = allowed ?? 0 }
        guard base > 0 else { return }
        let taken = rate(intervalAnswered, measuredAnswered, at: now)
        if learnt != nil, taken > 0, taken < base / 2 { base = taken }
        if let allowed { base = min(base, allowed) }
        base = max(base, configuration.minimum)
        lastMaximum = base
        learnt = max(configuration.minimum, base * configuration.decrease)
        cutAt = now
        cycle = min(max(Double(configuration.cycleRequests) / base, configuration.shortestCycle.seconds), configuration.longestCycle.seconds)
        cubic = base * (1 - configuration.decrease) / (cycle * cycle * cycle)
        // Spaced from now on: no token saved up before the cut.
        tokens = 0
        refilledAt = now
    }

    /// The scope said at `now` that `remaining` requests are left until its quota resets after
    /// `reset`. Caps the rate at this host's share of what remains, spread over the time left;
    /// with nothing left, nothing is sent before the reset.
    public mutating func quota(remaining: Int, reset: Duration, at now: Instant) {
        guard configuration.adaptsRate, reset > .zero, remaining >= 0 else { return }
        let resetAt = now.advanced(by: reset)
        var next = Quota(remaining: remaining, resetAt: resetAt, rate: 0)
        if var last = quota, abs(last.resetAt.duration(to: resetAt).seconds) < Self.sameWindow.seconds, remaining <= last.remaining {
            // The same window: how much was consumed since this host's last answer tells its share.
            last.answers += 1
            last.consumed += last.remaining - remaining
            if last.consumed >= Self.shareSample || last.answers >= Self.shareSample {
                let sample = min(1, Double(last.answers) / Double(max(last.consumed, 1)))
                quotaShare += (sample - quotaShare) * Self.shareWeight
                last.answers = 0
                last.consumed = 0
            }
            next.answers = last.answers
            next.consumed = last.consumed
        }
        next.rate = remaining == 0 ? 0 : max(Double(remaining) * quotaShare / reset.seconds, configuration.minimum)
        quota = next
        if refilledAt == nil { tokens = 1 }
    }

    /// After this many cycles of the curve without a refusal (at most ``ErrorBusConfiguration/Pacing/quiet``)
    /// the rate is off: the curve has come back to where it was cut and probed to over three times
    /// that without meeting the limit, so the limit has moved (the hosts it was shared with are
    /// done). With two, a host alone against a rate limit met it again only after the rate was
    /// off, and 13 % of its requests were refused (PacingTests).
    static var quietCycles: Double { 3 }

    /// Two answers whose resets differ by less than this name the same window.
    private static var sameWindow: Duration { .seconds(1) }
    /// The share is sampled once this many answers, or this much consumption, were seen.
    private static var shareSample: Int { 8 }
    private static var shareWeight: Double { 0.3 }

    /// Counts a request sent at `now` into the measured rate.
    private mutating func sent(at now: Instant) {
        guard !isHeld else { return }
        roll(at: now)
        intervalSends += 1
    }

    /// Ends the measurement interval under way once it is long enough, folding its counts into
    /// the measured rates.
    private mutating func roll(at now: Instant) {
        guard let start = intervalStart else {
            intervalStart = now
            return
        }
        let elapsed = start.duration(to: now)
        guard elapsed >= configuration.measurement else { return }
        fold(elapsed)
        intervalStart = now
        intervalSends = 0
        intervalAnswered = 0
    }

    /// Folds the counts of the interval under way, `elapsed` long, into the measured rates.
    private mutating func fold(_ elapsed: Duration) {
        func fold(_ count: Int, into measured: inout Double) {
            let current = Double(count) / elapsed.seconds
            measured = measured == 0 ? current : measured + (current - measured) * 0.8
        }
        fold(intervalSends, into: &measured)
        fold(intervalAnswered, into: &measuredAnswered)
    }

    /// What this host has been sending at `now`.
    private func sendRate(at now: Instant) -> Double {
        rate(intervalSends, measured, at: now)
    }

    /// A rate at `now`: the measured one, or the interval under way's when it shows more (a host
    /// that just began to send more is seen before its interval ends).
    private func rate(_ count: Int, _ measured: Double, at now: Instant) -> Double {
        guard let start = intervalStart, count > 0 else { return measured }
        let elapsed = start.duration(to: now)
        let current = Double(count) / max(elapsed.seconds, configuration.measurement.seconds / 2)
        return max(measured, current)
    }
}
