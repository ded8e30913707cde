/// What makes two failures the same incident: where, what kind, and why.
///
/// Its hash is computed once, when it is made: a burst of failures reported with one failure
/// value looks its incident up without hashing strings each time.
public struct Fingerprint: Sendable, Hashable, CustomStringConvertible {
    /// The endpoint's host for network categories, the auth realm for `unauthenticated`, the
    /// service for `fatal`, the job's scope for `invalid`.
    public let scope: String
    public let kind: ErrorCategory.Kind
    /// A short, stable code, e.g. `"connectionRefused"`.
    public let cause: String
    /// The job the failure belongs to, when the bus groups failures per job
    /// (``ErrorBusConfiguration/Grouping/perJob``); `nil` when they are grouped by cause.
    public let job: String?
    private let hashCode: Int

    public init(scope: String, kind: ErrorCategory.Kind, cause: String, job: String? = nil) {
        self.scope = scope
        self.kind = kind
        self.cause = cause
        self.job = job
        var hasher = Hasher()
        hasher.combine(scope)
        hasher.combine(kind)
        hasher.combine(cause)
        hasher.combine(job)
        hashCode = hasher.finalize()
    }

    public static func == (lhs: Fingerprint, rhs: Fingerprint) -> Bool {
        lhs.hashCode == rhs.hashCode && lhs.kind == rhs.kind && lhs.scope == rhs.scope && lhs.cause == rhs.cause
            && lhs.job == rhs.job
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(hashCode)
    }

    public var description: String {
        guard let job else { return "\(kind) \(scope) (\(cause))" }
        return "\(kind) \(scope) (\(cause)) for \(job)"
    }
}
