/// What kind of failure an error is, and so which policy the bus runs for it.
///
/// The bus never sees raw status codes or socket errors: whoever knows the failure (an HTTP
/// client, a file system call) maps it to one of these categories, and the bus decides what to
/// do from the category alone.
public enum ErrorCategory: Sendable, Hashable {
    /// The remote end cannot be reached: DNS failure, connection refused, no route, network down,
    /// connect timeout, or a captive portal answering in its place. Policy: the reachability gate.
    case unreachable
    /// The remote end asked us to slow down (429, or 503 with `Retry-After`). Policy: wait for the
    /// hint, then send one canary.
    case rateLimited(retryAfter: Duration?)
    /// A failure that is likely to go away by itself: 5xx without a hint, a read timeout, a reset.
    /// Policy: incident-level exponential back-off with one canary per step.
    case transient
    /// The credentials were not accepted (401, an expired or revoked token). Policy: single-flight
    /// re-authentication, then release every job of the realm.
    case unauthenticated
    /// The request itself is wrong and will fail the same way again (400, 404, 409, 413, 422, an
    /// undecodable answer). Policy: no retry; the job is dead-lettered with the reason.
    case invalid(reason: String)
    /// A local condition that stops the service: disk full, permission denied, misconfiguration.
    /// Policy: pause the service until an operator resumes it or the condition clears.
    case fatal

    /// The category without its associated values: the part that takes part in a fingerprint.
    public var kind: Kind {
        switch self {
        case .unreachable: .unreachable
        case .rateLimited: .rateLimited
        case .transient: .transient
        case .unauthenticated: .unauthenticated
        case .invalid: .invalid
        case .fatal: .fatal
        }
    }

    /// The category without its associated values.
    public enum Kind: String, Sendable, Hashable, CaseIterable, CustomStringConvertible {
        case unreachable
        case rateLimited
        case transient
        case unauthenticated
        case invalid
        case fatal

        public var description: String { rawValue }

        /// Whether an open incident of this kind holds back every new job of its scope.
        ///
        /// `invalid` concerns only the job that carried the bad request, so it holds back nothing.
        var holdsScope: Bool { self != .invalid }

        /// Whether a job that fails this way while others of its service and scope succeed is
        /// told apart as failing on its own (``ErrorBusConfiguration/Isolation``): a server can
        /// answer one request badly, but not a realm's sign-in or a local condition.
        var isolates: Bool {
            switch self {
            case .unreachable, .transient, .rateLimited: true
            case .unauthenticated, .invalid, .fatal: false
            }
        }

        /// Whether a failure of this kind, met while its scope still serves other jobs, paces the
        /// scope's work instead of holding it (``IncidentState/pacing``): a server that refuses
        /// some requests (`transient`, `rateLimited`). A scope that cannot be reached is probed.
        package var paces: Bool {
            switch self {
            case .transient, .rateLimited: true
            case .unreachable, .unauthenticated, .invalid, .fatal: false
            }
        }

        /// What the scope of a failure of this kind names: the one rule by which a failure's
        /// scope is chosen (``Failure/init(_:job:)``, a classifier's default) and an incident
        /// holds back work.
        public var scopeKind: ScopeKind {
            switch self {
            case .unreachable, .invalid: .host
            case .rateLimited, .transient: .serviceAtHost
            case .unauthenticated: .realm
            case .fatal: .service
            }
        }
    }

    /// What a failure's scope names.
    public enum ScopeKind: Sendable, Hashable {
        /// The server the job talks to (``Job/scope``): a server that cannot be reached holds back
        /// every job sent there, whatever its service.
        case host
        /// The server the job talks to, for the jobs of the failing job's service only: a server
        /// error or a rate limit met by one service's requests (uploads, say) says nothing of
        /// another service's requests to the same server (resources), which go on.
        case serviceAtHost
        /// The credentials' realm (``Job/realm``): one sign-in serves every job of the realm.
        case realm
        /// The job's service: a fatal condition pauses the service.
        case service
    }
}

extension ErrorCategory: CustomStringConvertible {
    public var description: String {
        switch self {
        case .rateLimited(let hint?): "rateLimited(retryAfter: \(hint))"
        case .invalid(let reason): "invalid(\(reason))"
        default: kind.rawValue
        }
    }
}
