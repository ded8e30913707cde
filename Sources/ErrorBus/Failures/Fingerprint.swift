/// What makes two failures the same incident: where, what kind, and why (and, for the kinds that
/// concern one service's requests, whose).
///
/// Its hash is computed once, when it is made: a burst of failures reported with one failure
/// value looks its incident up without hashing strings each time.
public struct Fingerprint: Sendable, Hashable, CustomStringConvertible {
    /// The job's scope (the server: an origin such as `https://api.example.net`) for network
    /// categories and `invalid`, the auth realm for `unauthenticated`, the service for `fatal`.
    public let scope: String
    public let kind: ErrorCategory.Kind
    /// A short, stable code, e.g. `"connectionRefused"`.
    public let cause: String
    /// The service whose requests met the failure, for the kinds that concern one service's work
    /// at its scope (``ErrorCategory/ScopeKind/serviceAtHost``: `transient`, `rateLimited`): a
    /// server's `500` for uploads says nothing of its resources. `nil` for the other kinds.
    public let service: String?
    /// The job the failure belongs to, when the bus groups failures per job
    /// (``ErrorBusConfiguration/Grouping/perJob``); `nil` when they are grouped by cause.
    public let job: String?
    private let hashCode: Int

    public init(scope: String, kind: ErrorCategory.Kind, cause: String, service: String? = nil, job: String? = nil) {
        self.scope = scope
        self.kind = kind
        self.cause = cause
        self.service = service
        self.job = job
        var hasher = Hasher()
        hasher.combine(scope)
        hasher.combine(kind)
        hasher.combine(cause)
        hasher.combine(service)
        hasher.combine(job)
        hashCode = hasher.finalize()
    }

    public static func == (lhs: Fingerprint, rhs: Fingerprint) -> Bool {
        lhs.hashCode == rhs.hashCode && lhs.kind == rhs.kind && lhs.scope == rhs.scope && lhs.cause == rhs.cause
            && lhs.service == rhs.service && lhs.job == rhs.job
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(hashCode)
    }

    public var description: String {
        let place = service.map { "\($0) at \(scope)" } ?? scope
        guard let job else { return "\(kind) \(place) (\(cause))" }
        return "\(kind) \(place) (\(cause)) for \(job)"
    }
}
