#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// What the API can take, as `PUT /admin/capacity` and `--capacity` set it: how many requests it
/// serves at once and how many it admits per second. Beyond that, requests wait in a queue (their
/// answers come late) and, once the queue is full, are shed with `503` and `Retry-After`, as a
/// real load shedder does. Optionally the capacity is low for a while and ramps up, as an API
/// with cold caches does after an outage.
public struct CapacitySpec: Codable, Sendable, Equatable {
    /// Requests served at once; unlimited when absent.
    public var concurrency: Int?
    /// Requests admitted per second (a token bucket holding one second's worth); unlimited when
    /// absent. A request that finds no token is shed.
    public var perSecond: Double?
    /// Requests that may wait for a free slot; more are shed. Default 0: shed at once.
    public var queue: Int?
    /// How long each request holds its slot before it is answered, in milliseconds, on top of
    /// the real work. Default 0.
    public var serviceMs: Double?
    /// The `Retry-After` of a shed request, in seconds. Default 1.
    public var retryAfter: Int?
    /// The routes limited; default `["items"]`.
    public var routes: [String]?
    /// A capacity that starts low and ramps up.
    public var rampUp: RampUp?
    /// A quota: so many requests per window, told with every answer of the limited routes
    /// (`RateLimit`, `RateLimit-Policy`), refused beyond with `429` until the window ends.
    public var quota: Quota?

    /// `limit` requests in each window of `window` seconds, the windows counted from when the
    /// capacity is set.
    public struct Quota: Codable, Sendable, Equatable {
        public var limit: Int
        public var window: Double

        public init(limit: Int, window: Double) {
            self.limit = limit
            self.window = window
        }
    }

    /// From `after` seconds on (counted from when the capacity is set), the capacity is `from`
    /// times the full one, rising linearly to the full one over `seconds`.
    public struct RampUp: Codable, Sendable, Equatable {
        public var after: Double?
        public var from: Double
        public var seconds: Double

        public init(after: Double? = nil, from: Double, seconds: Double) {
            self.after = after
            self.from = from
            self.seconds = seconds
        }
    }

    public init(
        concurrency: Int? = nil,
        perSecond: Double? = nil,
        queue: Int? = nil,
        serviceMs: Double? = nil,
        retryAfter: Int? = nil,
        routes: [String]? = nil,
        rampUp: RampUp? = nil,
        quota: Quota? = nil
    ) {
        self.concurrency = concurrency
        self.perSecond = perSecond
        self.queue = queue
        self.serviceMs = serviceMs
        self.retryAfter = retryAfter
        self.routes = routes
        self.rampUp = rampUp
        self.quota = quota
    }

    /// A capacity from its JSON text (as `PUT /admin/capacity` takes it), checked.
    public init(json: String) throws(CapacityError) {
        do {
            self = try JSONDecoder().decode(CapacitySpec.self, from: Data(json.utf8))
        } catch {
            throw CapacityError("not a capacity: \(error)")
        }
        _ = try capacity(setAt: .zero)
    }

    /// The limits this spec sets, or why it is not one.
    func capacity(setAt now: Duration) throws(CapacityError) -> Capacity {
        if let concurrency, concurrency < 1 { throw CapacityError("concurrency must be at least 1, got \(concurrency)") }
        if let perSecond, !(perSecond > 0 && perSecond.isFinite) { throw CapacityError("perSecond must be a positive number, got \(perSecond)") }
        if let queue, queue < 0 { throw CapacityError("queue must not be negative, got \(queue)") }
        if let serviceMs, !(serviceMs >= 0 && serviceMs <= 600_000) { throw CapacityError("serviceMs must be 0 to 600000, got \(serviceMs)") }
        if let retryAfter, !(0...86_400).contains(retryAfter) { throw CapacityError("retryAfter must be 0 to 86400 seconds, got \(retryAfter)") }
        var routes: Set<SandboxRoute> = []
        for name in self.routes ?? ["items"] {
            if name == "all" {
                routes.formUnion(SandboxRoute.faultable)
            } else if let route = SandboxRoute(rawValue: name), SandboxRoute.faultable.contains(route) {
                routes.insert(route)
            } else {
                throw CapacityError("routes: \(name) is none of token, items, resources, healthz, all")
            }
        }
        var ramp: Capacity.Ramp?
        if let rampUp {
            guard rampUp.from > 0 && rampUp.from <= 1 else { throw CapacityError("rampUp.from must be above 0 and at most 1, got \(rampUp.from)") }
            guard rampUp.seconds >= 0 && rampUp.seconds.isFinite else { throw CapacityError("rampUp.seconds must not be negative, got \(rampUp.seconds)") }
            let after = rampUp.after ?? 0
            guard after >= 0 && after.isFinite else { throw CapacityError("rampUp.after must not be negative, got \(after)") }
            ramp = Capacity.Ramp(start: now + .seconds(after), from: rampUp.from, length: .seconds(rampUp.seconds))
        }
        if let quota {
            guard quota.limit >= 1 else { throw CapacityError("quota.limit must be at least 1, got \(quota.limit)") }
            guard quota.window > 0 && quota.window <= 86_400 else { throw CapacityError("quota.window must be above 0 and at most 86400 seconds, got \(quota.window)") }
        }
        return Capacity(
            spec: self,
            concurrency: concurrency,
            perSecond: perSecond,
            queue: queue ?? 0,
            service: .milliseconds(serviceMs ?? 0),
            retryAfter: retryAfter ?? 1,
            routes: routes,
            ramp: ramp,
            quota: quota.map { (limit: $0.limit, window: Duration.seconds($0.window), start: now) }
        )
    }
}

/// A capacity the sandbox cannot apply: the admin API's 400.
public struct CapacityError: Error, Sendable, CustomStringConvertible {
    public let reason: String
    init(_ reason: String) { self.reason = reason }
    public var description: String { reason }
}

/// The limits in force, compiled from a ``CapacitySpec``.
struct Capacity: Sendable, Equatable {
    let spec: CapacitySpec
    let concurrency: Int?
    let perSecond: Double?
    let queue: Int
    let service: Duration
    let retryAfter: Int
    let routes: Set<SandboxRoute>
    let ramp: Ramp?
    /// The quota, its windows counted from `start`.
    let quota: (limit: Int, window: Duration, start: Duration)?

    static func == (lhs: Capacity, rhs: Capacity) -> Bool {
        lhs.spec == rhs.spec && lhs.ramp == rhs.ramp && lhs.quota?.start == rhs.quota?.start
    }

    struct Ramp: Sendable, Equatable {
        let start: Duration
        let from: Double
        let length: Duration

        /// The share of the full capacity at `now`: 1 before the ramp starts and after it ends.
        func factor(at now: Duration) -> Double {
            guard now >= start else { return 1 }
            guard length > .zero else { return 1 }
            let progress = min(1, (now - start) / length)
            return from + (1 - from) * progress
        }
    }

    /// Requests served at once at `now`, if limited.
    func concurrency(at now: Duration) -> Int? {
        concurrency.map { max(1, Int((Double($0) * (ramp?.factor(at: now) ?? 1)).rounded())) }
    }

    /// Requests admitted per second at `now`, if limited.
    func perSecond(at now: Duration) -> Double? {
        perSecond.map { $0 * (ramp?.factor(at: now) ?? 1) }
    }
}
