/// Tells the bus whether a scope answers again, for `unreachable` incidents (and `fatal` ones: a
/// probe may check a local condition, e.g. free disk space, for a service's scope).
public protocol ReachabilityProbe: Sendable {
    /// Checks `scope` once. Must end by itself in bounded time.
    func probe(_ scope: String, kind: ErrorCategory.Kind) async -> ProbeResult
}

/// The answer of one probe.
public enum ProbeResult: Sendable, Equatable {
    /// The scope answers as expected.
    case reachable
    /// It does not, and why, in an operator's words (e.g. "redirected to a login page: a
    /// captive portal answers instead of the API").
    case unreachable(reason: String)
    /// This probe cannot check this kind of scope: only an operator can resume it.
    case unsupported
}

/// Signs in again for a realm, for `unauthenticated` incidents.
public protocol Authenticator: Sendable {
    /// Obtains new credentials for `realm`. The bus calls it once per incident at a time.
    func reauthenticate(realm: String) async -> ReauthenticationResult
}

/// The answer of one re-authentication.
public enum ReauthenticationResult: Sendable, Equatable {
    /// New credentials are in place: parked work can run again.
    case renewed
    /// The credentials themselves were refused: an operator must act. The text says what.
    case rejected(OperatorText)
    /// The authenticator could not be asked (e.g. its endpoint is down); the bus tries again
    /// with back-off.
    case unavailable(reason: String)
}
