import HTTPTypes
import Hummingbird
import NIOCore

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// An RFC 9457 problem: every error the sandbox answers (outside the OAuth token endpoint, which
/// answers RFC 6749 §5.2 errors) is one of these, as `application/problem+json`.
struct ProblemDetails: HTTPResponseError, Sendable {
    /// A URI naming the kind of problem.
    var type: String
    /// A short, human-readable summary of the kind of problem.
    var title: String
    /// The HTTP status code.
    var status: HTTPResponse.Status
    /// What happened in this occurrence, for a person.
    var detail: String?
    /// The occurrence; the request path when not set.
    var instance: String?
    /// Extra response headers (`Retry-After`, `WWW-Authenticate`, …).
    var headers: HTTPFields

    /// Creates a problem.
    init(
        type: String = "about:blank",
        title: String? = nil,
        status: HTTPResponse.Status,
        detail: String? = nil,
        instance: String? = nil,
        headers: HTTPFields = [:]
    ) {
        self.type = type
        self.title = title ?? Self.reasonPhrase(for: status.code)
        self.status = status
        self.detail = detail
        self.instance = instance
        self.headers = headers
    }

    /// The problem as an HTTP response.
    func response(from request: Request, context: some RequestContext) throws -> Response {
        response(instance: instance ?? request.uri.path)
    }

    /// The problem as an HTTP response, naming `instance`.
    func response(instance: String?) -> Response {
        let body = Body(type: type, title: title, status: status.code, detail: detail, instance: instance)
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        // Encoding five strings and an integer cannot fail.
        let json = (try? encoder.encode(body)) ?? Data()
        var headers = self.headers
        headers[.contentType] = "application/problem+json"
        return Response(status: status, headers: headers, body: .init(byteBuffer: ByteBuffer(bytes: json)))
    }

    private struct Body: Encodable {
        let type: String
        let title: String
        let status: Int
        let detail: String?
        let instance: String?
    }

    /// The standard reason phrase of `code`, or `HTTP <code>` for codes without one.
    static func reasonPhrase(for code: Int) -> String {
        switch code {
        case 400: "Bad Request"
        case 401: "Unauthorized"
        case 403: "Forbidden"
        case 404: "Not Found"
        case 405: "Method Not Allowed"
        case 406: "Not Acceptable"
        case 408: "Request Timeout"
        case 409: "Conflict"
        case 410: "Gone"
        case 411: "Length Required"
        case 412: "Precondition Failed"
        case 413: "Content Too Large"
        case 415: "Unsupported Media Type"
        case 422: "Unprocessable Content"
        case 423: "Locked"
        case 428: "Precondition Required"
        case 429: "Too Many Requests"
        case 500: "Internal Server Error"
        case 501: "Not Implemented"
        case 502: "Bad Gateway"
        case 503: "Service Unavailable"
        case 504: "Gateway Timeout"
        case 507: "Insufficient Storage"
        default: "HTTP \(code)"
        }
    }
}

extension ProblemDetails {
    /// 400: the admin API was sent a fault it cannot apply.
    static func badFault(_ detail: String) -> ProblemDetails {
        ProblemDetails(type: "urn:errorbus:sandbox:bad-fault", title: "Invalid fault", status: .badRequest, detail: detail)
    }

    /// 400: the request itself is malformed.
    static func badRequest(_ detail: String) -> ProblemDetails {
        ProblemDetails(type: "urn:errorbus:sandbox:bad-request", status: .badRequest, detail: detail)
    }

    /// 404.
    static func notFound(_ detail: String) -> ProblemDetails {
        ProblemDetails(type: "urn:errorbus:sandbox:not-found", status: .notFound, detail: detail)
    }

    /// 401 with `WWW-Authenticate: Bearer error="invalid_token"` (RFC 6750 §3.1).
    static func invalidToken(_ detail: String) -> ProblemDetails {
        ProblemDetails(
            type: "urn:errorbus:sandbox:invalid-token",
            title: "Invalid access token",
            status: .unauthorized,
            detail: detail,
            headers: [
                .wwwAuthenticate: #"Bearer realm="errorbus-sandbox", error="invalid_token", error_description="\#(detail)""#
            ]
        )
    }
}
