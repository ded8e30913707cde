/// Everything about an ``ErrorBus`` that can be tuned. The defaults suit a daemon talking to one
/// HTTP API.
///
/// Values, compared as such: a daemon that reloads its settings can tell what changed. How errors
/// that do not conform to ``CategorizedError`` are categorised is code, not a setting: the
/// `fallback` of ``ErrorBus/ErrorBus/init(configuration:clock:probe:authenticator:random:fallback:logger:)``.
public struct ErrorBusConfiguration: Sendable, Equatable {
    /// Back-off for `transient` incidents (and `rateLimited` ones without a hint, and an
    /// authenticator that cannot be reached).
    public var backoff = Backoff()
    /// How `rateLimited` incidents treat the server's hint.
    public var rateLimit = RateLimit()
    /// How `unreachable` incidents probe.
    public var reachability = Reachability()
    /// How many jobs of one scope run at once, first runs and released jobs alike, and how
    /// that number adapts to the scope's answers.
    public var concurrency = Concurrency()
    /// How a scope that serves some requests and refuses others is paced: the rate each scope is
    /// sent (``AdaptiveRate``), and when the jobs it refused are tried again.
    public var pacing = Pacing()
    /// How parked jobs are released once an incident's cause is gone.
    public var release = Release()
    /// The process-wide budget for retries on top of first attempts.
    public var retryBudget = RetryBudget()
    /// What becomes of a job that fails while others of its service and scope succeed.
    public var isolation = Isolation()
    /// Which failures make one incident. ``Grouping/byCause`` (the default) is what the bus is
    /// for; ``Grouping/perJob`` is an ablation for benchmarks and diagnosis, not for production.
    public var grouping = Grouping.byCause
    /// How many jobs may be parked at once, over all incidents. Beyond it a new job is stopped
    /// with ``JobStopped/Reason/parkingFull`` and a ``BusEvent/Kind/parkingOverflow`` event.
    public var maxParkedJobs = 100_000
    /// An `invalid` incident stays open to group same-cause dead letters until none arrived for
    /// this long.
    public var deadLetterGroupingWindow: Duration = .seconds(60)
    /// An incident whose cause went away and whose jobs were all released stays open this long
    /// (``IncidentState/settling``), holding nothing back: the same cause coming back meanwhile is
    /// this incident again, its policy going on where it was (its back-off longer), not a new
    /// one; a cause that flaps is one incident. `.zero`: it resolves at once.
    public var settleWindow: Duration = .seconds(10)
    /// How many events an event subscriber may fall behind before it loses the oldest.
    public var eventBufferSize = 1_024
    /// How many resolved incidents the snapshot keeps.
    public var resolvedIncidentHistory = 64
    /// The id of the first incident; a daemon that keeps incident history across restarts starts
    /// after the last one it stored.
    public var firstIncidentID: UInt64 = 1
    /// How long one run of a job's operation may take: a run still going then is cancelled and
    /// fails with ``AttemptTimedOut`` (`transient`), so that a request that never gets an answer
    /// cannot hold its job and its scope's slot for ever. The cancellation is cooperative: the run
    /// ends when the operation heeds it (AsyncHTTPClient, `Task.sleep` and most async APIs do).
    /// Counted on the bus's clock; `nil`: no limit.
    public var attemptTimeout: Duration? = .seconds(300)

    public init() {}

    /// Uncategorised errors are treated as `transient`: retried with back-off, never more often
    /// than the retry budget allows.
    public static let defaultFallback: @Sendable (any Error, Job) -> Failure = { error, job in
        Failure(
            category: .transient,
            scope: job.scope,
            cause: String(describing: type(of: error)),
            service: job.service,
            text: OperatorText(
                title: "Unexpected error",
                message: "\(job.service) failed with an error it does not classify: \(String(describing: error).prefix(200))"
            ),
            error: error
        )
    }

    /// Which failures the bus treats as one incident.
    public enum Grouping: Sendable, Equatable {
        /// Failures with the same scope, kind and cause are one incident, whatever job met them:
        /// one policy run (back-off, probing, re-authentication) for all of them, and the
        /// incident holds back the scope, realm or service for every job while it lasts.
        case byCause
        /// The job's identity joins the fingerprint: each job that fails is an incident of its
        /// own, with its own policy run, and holds back nothing but itself — per-request retry
        /// with the bus's back-off, probing and re-authentication. For comparing against
        /// ``byCause`` (scripts/bench-outages) and for diagnosis; not for production.
        case perJob
    }

    /// Exponential back-off with full jitter below the cap, and between half the cap and the cap
    /// once there.
    ///
    /// The default cap is short on purpose: an incident sends one canary per step for all its
    /// jobs, so the cap is how late the end of an outage is noticed (at most 2 s, 0.8 s on
    /// average), and a long outage is paced by ``RetryBudget`` (by default a bucket of 10 canaries, 9 in it at the start, then 9 a minute),
    /// which every canary draws on.
    public struct Backoff: Sendable, Equatable {
        /// The first delay's upper bound.
        public var base: Duration = .seconds(1)
        /// Each step multiplies the bound by this.
        public var factor: Double = 2
        /// The bound never exceeds this; at the cap a delay is between half of it and all of it.
        public var cap: Duration = .seconds(2)

        public init(base: Duration = .seconds(1), factor: Double = 2, cap: Duration = .seconds(2)) {
            self.base = base
            self.factor = factor
            self.cap = cap
        }
    }

    /// How the server's `Retry-After` hint is honoured.
    public struct RateLimit: Sendable, Equatable {
        /// Shorter hints are raised to this.
        public var minimum: Duration = .seconds(1)
        /// Longer hints are lowered to this.
        public var maximum: Duration = .seconds(3_600)
        /// Up to this fraction is added to the hint, so clients that were told the same moment
        /// do not all come back in it. Never subtracted.
        public var jitter: Double = 0.5

        public init(minimum: Duration = .seconds(1), maximum: Duration = .seconds(3_600), jitter: Double = 0.5) {
            self.minimum = minimum
            self.maximum = maximum
            self.jitter = jitter
        }
    }

    /// How an unreachable scope is probed.
    public struct Reachability: Sendable, Equatable {
        /// The wait before the first probe.
        public var initialInterval: Duration = .seconds(1)
        /// Each failed probe multiplies the wait by this.
        public var factor: Double = 2
        /// The wait never exceeds this.
        public var maximumInterval: Duration = .seconds(30)
        /// Causes on the host's side of the network, which cost the API nothing to probe.
        public var localCauses: Set<String> = Self.defaultLocalCauses
        /// The longest wait between probes of a local cause.
        public var localMaximumInterval: Duration = .seconds(2)
        /// After a network change, a waiting gate probes within this (uniformly drawn); zero:
        /// at once.
        public var networkChangeSpread: Duration = .seconds(1)

        /// The causes errorbusd's HTTP classification names for a problem on the host's side: a
        /// captive portal, no name resolution, no route, no network, no local address.
        public static let defaultLocalCauses: Set<String> = [
            "captivePortal", "dnsFailure", "hostUnreachable", "networkUnreachable", "networkDown", "noLocalAddress",
        ]

        public init(
            initialInterval: Duration = .seconds(1),
            factor: Double = 2,
            maximumInterval: Duration = .seconds(30),
            localCauses: Set<String> = Self.defaultLocalCauses,
            localMaximumInterval: Duration = .seconds(2),
            networkChangeSpread: Duration = .seconds(1)
        ) {
            self.initialInterval = initialInterval
            self.factor = factor
            self.maximumInterval = maximumInterval
            self.localCauses = localCauses
            self.localMaximumInterval = localMaximumInterval
            self.networkChangeSpread = networkChangeSpread
        }
    }

    /// The adaptive concurrency limit each scope gets (``ConcurrencyLimit``).
    ///
    /// The defaults suit a fleet: every host starts slow after an incident, so a recovered API
    /// sees the fleet's load ramp up over a few round trips, and each host halves its share
    /// when the API sheds load or slows down. On a healthy API the limit reaches ``maximum``
    /// within `log2(maximum)` round trips.
    public struct Concurrency: Sendable, Equatable {
        /// The most jobs of one scope at once, 1 or more. Default 16.
        public var maximum: Int
        /// Where a slow start begins (at the start, and when an incident's cause is gone).
        /// Default 1.
        public var initial: Int
        /// The factor a decrease multiplies the limit by, above 0 and at most 1 (never decrease).
        /// Default 0.5.
        public var decrease: Double
        /// A round trip whose mean latency exceeds this times the baseline counts as
        /// back-pressure, 1 or more. Default 2.
        public var latencyTolerance: Double
        /// The weight of each round trip's mean latency in the baseline, above 0 and at most 1.
        /// Default 0.1.
        public var baselineWeight: Double

        public init(maximum: Int = 16, initial: Int = 1, decrease: Double = 0.5, latencyTolerance: Double = 2, baselineWeight: Double = 0.1) {
            self.maximum = max(1, maximum)
            self.initial = min(max(1, initial), self.maximum)
            self.decrease = min(max(decrease, 0.01), 1)
            self.latencyTolerance = max(1, latencyTolerance)
            self.baselineWeight = min(max(baselineWeight, 0.001), 1)
        }

        /// A limit that does not adapt: it starts at `maximum` and never decreases.
        public static func fixed(_ maximum: Int) -> Concurrency {
            Concurrency(maximum: maximum, initial: maximum, decrease: 1)
        }
    }

    /// A job whose failures are its own (a file the server refuses, a request that never gets an
    /// answer, a `429` for one name) rather than its scope's leaves the scope's incident and
    /// becomes an incident of its own that holds back nothing else. That incident retries the job
    /// on this back-off (a `rateLimited` one waits for the server's hint), each retry drawing on
    /// the retry budget, and sets it aside as a dead letter with its cause once it has failed
    /// ``maxAttempts`` times on its own.
    ///
    /// **The rule.** A job's failures are its own once the chance that it failed so many times,
    /// had it failed only as often as the scope's other jobs did at the same time, is below one in
    /// 10^``evidence``. Each failure of the job adds `log10(1 / share)` to its evidence, where
    /// `share` is how often the scope failed its other jobs' fresh runs the same way (the same
    /// cause) among its latest runs, but only when another job of its
    /// service and scope succeeded since its previous failure: failures while nothing else is served (an outage, or
    /// no traffic beside it) say nothing of the job. So one file the API refuses among good ones
    /// is told apart within a few failures, while a scope that refuses a share of everything (a
    /// rate limit, a bad backend) sets nothing aside: at a third refused, a good job would have to
    /// fail thirteen times in a row.
    ///
    /// Only `unreachable`, `transient` and `rateLimited` failures are told apart this way. While
    /// its scope is held by an incident of everyone's, the job's retries wait; a retry counts as a
    /// failure on its own only when another job succeeded since its previous one.
    public struct Isolation: Sendable, Equatable {
        /// How many failures on its own a job may have, the one that found it included, before
        /// it is set aside as a dead letter, 1 or more; `nil`: it is retried until it succeeds or
        /// an operator acts. Default 5.
        public var maxAttempts: Int?
        /// The back-off between its retries (a `rateLimited` job waits for the server's hint).
        /// Default: up to 2 s, doubling, at most 5 min: five attempts end within 30 s.
        public var backoff: Backoff
        /// How unlikely, in decimal orders of magnitude, a job's failures must be as the scope's
        /// before they count as its own: 6 is one chance in a million. Above 0. Default 6.
        public var evidence: Double

        public init(maxAttempts: Int? = 5, backoff: Backoff = Backoff(base: .seconds(2), factor: 2, cap: .seconds(300)), evidence: Double = 6) {
            self.maxAttempts = maxAttempts.map { max(1, $0) }
            self.backoff = backoff
            self.evidence = max(0.1, evidence)
        }
    }

    /// How a scope that refuses some requests and serves the others is paced.
    ///
    /// A failure while its scope still serves other jobs (a run succeeded lately, and the
    /// failures since are not too many to be chance at the share that failed before) is the
    /// scope's, one incident per cause, but it holds nothing back: the incident **paces**
    /// (``IncidentState/pacing``). New work and the jobs it refused go on through the scope's
    /// ``ConcurrencyLimit`` and ``AdaptiveRate``, each refused job after a back-off of its own
    /// (``retry``; a `rateLimited` one no sooner than the server's hint, plus jitter). Only when
    /// the scope stops serving does the incident hold it and test it with canaries.
    public struct Pacing: Sendable, Equatable {
        /// The back-off before a job the scope refused while it served others runs again.
        /// Default: up to 50 ms, doubling, at most 2 s.
        public var retry: Backoff
        /// Whether each scope's rate adapts to its refusals and its stated quota
        /// (``AdaptiveRate``); `false`: the rate is never limited (the concurrency still is).
        /// Default `true`.
        public var adaptsRate: Bool
        /// What a refusal multiplies the rate by, above 0 and below 1. Default 0.7.
        public var decrease: Double
        /// The lowest rate, in requests per second. Default 0.05 (one request every 20 s).
        public var minimum: Double
        /// The requests one cycle of the rate (a cut and its way back) should carry: about one
        /// refusal per this many requests. Default 20.
        public var cycleRequests: Int
        /// The shortest and longest time the rate takes to come back after a cut. Defaults 1 s
        /// and 5 s: a host cut to a low rate while many shared the scope takes its place back
        /// within seconds once they are done (with 60 s, a fleet of 100 against a rate limit took
        /// 5.3 times the ideal to drain, with 10 s 1.7: `scripts/bench-fleet --law rate`), at the
        /// cost of more refusals for a host alone below 4 requests a second (about one per 5 s).
        public var shortestCycle: Duration
        public var longestCycle: Duration
        /// After this long without a refusal the rate is off again, or after three cycles of its
        /// curve if that is sooner. Default 2 min.
        public var quiet: Duration
        /// The interval over which what a host sends is measured. Default 0.5 s.
        public var measurement: Duration

        public init(
            retry: Backoff = Backoff(base: .milliseconds(50), factor: 2, cap: .seconds(2)),
            adaptsRate: Bool = true,
            decrease: Double = 0.7,
            minimum: Double = 0.05,
            cycleRequests: Int = 20,
            shortestCycle: Duration = .seconds(1),
            longestCycle: Duration = .seconds(5),
            quiet: Duration = .seconds(120),
            measurement: Duration = .milliseconds(500)
        ) {
            self.retry = retry
            self.adaptsRate = adaptsRate
            self.decrease = min(max(decrease, 0.01), 0.99)
            self.minimum = max(minimum, 0.001)
            self.cycleRequests = max(1, cycleRequests)
            self.shortestCycle = max(shortestCycle, .milliseconds(1))
            self.longestCycle = max(longestCycle, self.shortestCycle)
            self.quiet = max(quiet, self.longestCycle)
            self.measurement = max(measurement, .milliseconds(10))
        }
    }

    /// How parked jobs are released (each takes a slot of its scope's ``Concurrency`` limit).
    public struct Release: Sendable, Equatable {
        /// Each released job starts after a random delay of up to this, so a recovery is not a
        /// stampede. The delays are taken one after another, so they also bound the release
        /// rate: about 2 / `spread` jobs a second (1 ms: ~2,000/s at most; the 10 ms this was
        /// took 4.7 s to release 776 parked uploads after an outage, scripts/bench-outages).
        public var spread: Duration = .milliseconds(1)

        public init(spread: Duration = .milliseconds(1)) {
            self.spread = spread
        }
    }

    /// The retry budget (a token bucket).
    ///
    /// The defaults suit a fleet: in an outage of any length a host sends at most `capacity`
    /// canaries at the back-off's pace, then `floorPerMinute` (one every 6.7 s), so that over
    /// five minutes it averages under one request per 5 s (`scripts/bench-fleet`), and a
    /// 30-second outage is still noticed within seconds.
    public struct RetryBudget: Sendable, Equatable {
        /// Tokens each success adds: retries may add at most this fraction of successes.
        public var successRatio: Double = 0.1
        /// Tokens time adds each minute, so recovery stays possible when nothing succeeds.
        public var floorPerMinute: Double = 9
        /// The most tokens the bucket holds: the longest burst of retries.
        public var capacity: Double = 10

        public init(successRatio: Double = 0.1, floorPerMinute: Double = 9, capacity: Double = 10) {
            self.successRatio = successRatio
            self.floorPerMinute = floorPerMinute
            self.capacity = capacity
        }
    }
}
