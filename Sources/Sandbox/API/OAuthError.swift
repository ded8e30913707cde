import HTTPTypes
import Hummingbird
import NIOCore

/// An RFC 6749 §5.2 error response from the token endpoint.
struct OAuthError: HTTPResponseError, Sendable {
    /// The `error` code: `invalid_request`, `invalid_client`, `unsupported_grant_type`, …
    let code: String
    /// The `error_description`, for the operator.
    let description: String
    let status: HTTPResponse.Status

    /// 400 `invalid_request`: the request is malformed.
    static func invalidRequest(_ description: String) -> OAuthError {
        OAuthError(code: "invalid_request", description: description, status: .badRequest)
    }

    /// 401 `invalid_client`: client authentication failed.
    static func invalidClient(_ description: String) -> OAuthError {
        OAuthError(code: "invalid_client", description: description, status: .unauthorized)
    }

    /// 400 `unsupported_grant_type`.
    static func unsupportedGrantType(_ description: String) -> OAuthError {
        OAuthError(code: "unsupported_grant_type", description: description, status: .badRequest)
    }

    func response(from request: Request, context: some RequestContext) throws -> Response {
        response()
    }

    /// The error as a response: JSON, never cached, with a Basic challenge on 401 (§5.2).
    func response() -> Response {
        let json = #"{"error":\#(JSONText.quote(code)),"error_description":\#(JSONText.quote(description))}"#
        var headers: HTTPFields = [
            .contentType: "application/json;charset=UTF-8",
            .cacheControl: "no-store",
            .pragma: "no-cache",
        ]
        if status == .unauthorized {
            headers[.wwwAuthenticate] = #"Basic realm="errorbus-sandbox", charset="UTF-8""#
        }
        return Response(status: status, headers: headers, body: .init(byteBuffer: ByteBuffer(string: json)))
    }
}
