import HTTPTypes
import Hummingbird
import NIOCore
import Synchronization

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

extension SandboxAPI {
    /// The largest token request body read.
    private static let maxTokenRequestBytes = 16 * 1024

    /// `POST /oauth/token`: the client-credentials grant (RFC 6749 §4.4), client authentication
    /// by HTTP Basic (§2.3.1) or by `client_id`/`client_secret` in the form.
    func issueToken(_ request: Request, context: BasicRequestContext) async throws -> Response {
        let body: ByteBuffer
        do {
            body = try await request.body.collect(upTo: Self.maxTokenRequestBytes)
        } catch {
            throw OAuthError.invalidRequest("The token request body is larger than \(Self.maxTokenRequestBytes) bytes.")
        }
        let form: [String: String]
        do {
            form = try FormURLEncoding.decode(body.readableBytesView)
        } catch .repeated(let name) {
            throw OAuthError.invalidRequest("The parameter \(name) appears more than once.")
        } catch {
            throw OAuthError.invalidRequest("The body is not application/x-www-form-urlencoded.")
        }

        let basic = try basicCredentials(request)
        let formCredentials = form["client_id"].map { (id: $0, secret: form["client_secret"] ?? "") }
        let credentials: (id: String, secret: String)
        switch (basic, formCredentials) {
        case (.some, .some):
            throw OAuthError.invalidRequest("The client authenticated twice (HTTP Basic and form fields); use one.")
        case (.some(let pair), nil), (nil, .some(let pair)):
            credentials = pair
        case (nil, nil):
            throw OAuthError.invalidClient("No client credentials were presented.")
        }
        guard constantTimeEqual(credentials.id, state.configuration.clientID),
            constantTimeEqual(credentials.secret, state.configuration.clientSecret)
        else {
            throw OAuthError.invalidClient("The client id or secret is wrong.")
        }

        guard let grantType = form["grant_type"] else {
            throw OAuthError.invalidRequest("The grant_type parameter is missing.")
        }
        guard grantType == "client_credentials" else {
            throw OAuthError.unsupportedGrantType("Only grant_type=client_credentials is supported, not \(grantType).")
        }

        let token = Self.newToken()
        let lifetime = state.configuration.tokenLifetime
        let now = state.clock.now
        state.tokens.withLock { $0.issue(token, expiresAt: now + lifetime, now: now) }
        let json = #"{"access_token":"\#(token)","token_type":"Bearer","expires_in":\#(lifetime.components.seconds)}"#
        return Response(
            status: .ok,
            headers: [.contentType: "application/json;charset=UTF-8", .cacheControl: "no-store", .pragma: "no-cache"],
            body: .init(byteBuffer: ByteBuffer(string: json))
        )
    }

    /// The client id and secret from `Authorization: Basic …`, if the request has one.
    private func basicCredentials(_ request: Request) throws -> (id: String, secret: String)? {
        guard let header = request.headers[.authorization] else { return nil }
        let parts = header.split(separator: " ", maxSplits: 1, omittingEmptySubsequences: true)
        guard parts.count == 2, parts[0].lowercased() == "basic" else {
            throw OAuthError.invalidClient("The Authorization header is not HTTP Basic.")
        }
        guard let decoded = Data(base64Encoded: String(parts[1]).trimmingSpaces),
            let colon = decoded.firstIndex(of: UInt8(ascii: ":"))
        else {
            throw OAuthError.invalidRequest("The HTTP Basic credentials are not base64 of id:secret.")
        }
        do {
            // RFC 6749 §2.3.1: both are form-urlencoded before they are joined.
            return (
                try FormURLEncoding.unescape(decoded[..<colon]),
                try FormURLEncoding.unescape(decoded[decoded.index(after: colon)...])
            )
        } catch {
            throw OAuthError.invalidRequest("The HTTP Basic credentials are not form-urlencoded UTF-8.")
        }
    }

    /// 32 random bytes, hex.
    private static func newToken() -> String {
        var generator = SystemRandomNumberGenerator()
        var bytes: [UInt8] = []
        bytes.reserveCapacity(32)
        for _ in 0..<4 {
            withUnsafeBytes(of: generator.next() as UInt64) { bytes.append(contentsOf: $0) }
        }
        return Hex.encode(bytes)
    }

    private func constantTimeEqual(_ lhs: String, _ rhs: String) -> Bool {
        let a = Array(lhs.utf8)
        let b = Array(rhs.utf8)
        var difference = UInt8(truncatingIfNeeded: a.count ^ b.count)
        for index in 0..<max(a.count, b.count) {
            difference |= (index < a.count ? a[index] : 0) ^ (index < b.count ? b[index] : 0)
        }
        return difference == 0
    }
}
