/// `GET /admin/stats`: what the sandbox received, for tests and benchmarks.
struct StatsReport: Codable, Sendable {
    /// Request totals.
    struct Requests: Codable, Sendable {
        /// Every request outside `/admin`.
        var total: Int
        /// route → outcome (`"201"`, `"503"`, `"reset"`, …) → count.
        var byRoute: [String: [String: Int]]
    }

    /// Token endpoint totals.
    struct Tokens: Codable, Sendable {
        /// Requests to `POST /oauth/token`, whatever their outcome.
        var requests: Int
        /// Tokens issued.
        var issued: Int
        /// Tokens valid right now.
        var active: Int
    }

    /// Upload totals.
    struct Items: Codable, Sendable {
        /// Distinct item ids stored.
        var distinct: Int
        /// Uploads stored under a new idempotency key.
        var uploads: Int
        /// Uploads answered 200 because their key had already been stored.
        var duplicatesAbsorbed: Int
        /// Uploads answered 422 because their key had been used for another id or body.
        var keysReused: Int
        /// Bytes held (latest version of each item).
        var bytes: Int
    }

    /// One bucket of the per-second histogram.
    struct Second: Codable, Sendable, Equatable {
        /// Whole seconds of sandbox time at arrival.
        var second: Int64
        var route: String
        var outcome: String
        var count: Int
    }

    /// One recent request.
    struct Recent: Codable, Sendable, Equatable {
        /// Arrival, in sandbox milliseconds.
        var ms: Double
        var route: String
        var method: String
        var outcome: String
    }

    /// Sandbox time now, in milliseconds (the clock every other `…Ms` and `second` uses).
    var nowMs: Double
    var requests: Requests
    var tokens: Tokens
    var items: Items
    /// Requests per second, route and outcome, in time order (absent with `?brief`).
    var perSecond: [Second]?
    /// The last requests (up to the configured capacity), oldest first (absent with `?brief`).
    var recent: [Recent]?
    /// The installed faults.
    var faults: [FaultReport]
    /// What the capacity limiter admitted and shed since the capacity was set (absent without one).
    var capacity: CapacityLimiter.Counts?
}
