import HTTPTypes
import Hummingbird
import Synchronization

extension SandboxAPI {
    /// Checks the request's bearer token (RFC 6750 §2.1) at `now`.
    ///
    /// - Throws: ``ProblemDetails`` 401 with `WWW-Authenticate: Bearer error="invalid_token"` when the
    ///   token is missing, unknown or expired.
    func authorize(_ request: Request, at now: Duration) throws(ProblemDetails) {
        guard let header = request.headers[.authorization] else {
            throw .invalidToken("No bearer token was presented.")
        }
        let parts = header.split(separator: " ", maxSplits: 1, omittingEmptySubsequences: true)
        guard parts.count == 2, parts[0].lowercased() == "bearer" else {
            throw .invalidToken("The Authorization header is not a bearer token.")
        }
        let token = String(parts[1]).trimmingSpaces
        switch state.tokens.withLock({ $0.validate(token, at: now) }) {
        case .valid: return
        case .expired: throw .invalidToken("The access token expired.")
        case .unknown: throw .invalidToken("The access token is not one this server issued.")
        }
    }
}
