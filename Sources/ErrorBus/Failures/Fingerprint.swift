/// What makes two failures the same incident: where, what kind, and why.
public struct Fingerprint: Sendable, Hashable, CustomStringConvertible {
    /// The endpoint's host for network categories, the auth realm for `unauthenticated`, the
    /// service for `fatal`, the job's scope for `invalid`.
    public var scope: String
    public var kind: ErrorCategory.Kind
    /// A short, stable code, e.g. `"connectionRefused"`.
    public var cause: String

    public init(scope: String, kind: ErrorCategory.Kind, cause: String) {
        self.scope = scope
        self.kind = kind
        self.cause = cause
    }

    public var description: String { "\(kind) \(scope) (\(cause))" }
}
