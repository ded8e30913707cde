import DequeModule

/// Every request the sandbox received (outside `/admin`), by route and outcome, over time.
struct RequestCounters: Sendable {
    /// One request, for the ring of recent ones.
    struct Record: Sendable, Equatable {
        /// Arrival, in sandbox milliseconds.
        var ms: Double
        var route: SandboxRoute
        var method: String
        var outcome: RequestOutcome
    }

    /// A bucket of the per-second histogram.
    struct SecondKey: Sendable, Hashable, Comparable {
        /// Whole seconds of sandbox time at arrival.
        var second: Int64
        var route: SandboxRoute
        var outcome: RequestOutcome

        static func < (lhs: SecondKey, rhs: SecondKey) -> Bool {
            (lhs.second, lhs.route, lhs.outcome) < (rhs.second, rhs.route, rhs.outcome)
        }
    }

    /// All requests.
    private(set) var total = 0
    /// Requests by route, then outcome.
    private(set) var byRoute: [SandboxRoute: [RequestOutcome: Int]] = [:]
    /// Requests per (second, route, outcome).
    private(set) var perSecond: [SecondKey: Int] = [:]
    /// The most recent requests, oldest first.
    private(set) var recent: Deque<Record> = []
    private let recentCapacity: Int

    init(recentCapacity: Int) {
        self.recentCapacity = max(0, recentCapacity)
    }

    /// Counts a request that arrived at `arrival` and ended with `outcome`.
    mutating func record(route: SandboxRoute, method: String, outcome: RequestOutcome, arrival: Duration) {
        total += 1
        byRoute[route, default: [:]][outcome, default: 0] += 1
        perSecond[SecondKey(second: arrival.components.seconds, route: route, outcome: outcome), default: 0] += 1
        guard recentCapacity > 0 else { return }
        if recent.count == recentCapacity { recent.removeFirst() }
        recent.append(Record(ms: arrival.milliseconds, route: route, method: method, outcome: outcome))
    }

    /// Forgets everything counted.
    mutating func removeAll() {
        self = RequestCounters(recentCapacity: recentCapacity)
    }
}
