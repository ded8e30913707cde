public import AsyncHTTPClient
public import NIOCore
public import NIOHTTP1

/// An answer whose status its request accepted, from
/// ``AsyncHTTPClient/HTTPClient/execute(_:accepting:deadline:overrides:logger:)``, with what
/// reading its body needs: the request's method and URL, for the failures, and its deadline,
/// which bounds the body too.
///
/// The body is a stream, read once: by one of ``collectBody(upTo:)``,
/// ``decodeBody(as:upTo:expected:refusal:)`` and ``discardBody(upTo:)``, or through
/// ``response`` for a body streamed elsewhere (to a file).
public struct AcceptedResponse: Sendable {
    /// The answer as AsyncHTTPClient gave it, its body not read yet.
    public var response: HTTPClientResponse
    /// The request's method, e.g. `PUT`.
    public var method: String
    /// The request's URL.
    public var url: String
    /// The request's deadline, for the body as for the head.
    public var deadline: NIODeadline

    public init(response: HTTPClientResponse, method: String, url: String, deadline: NIODeadline) {
        self.response = response
        self.method = method
        self.url = url
        self.deadline = deadline
    }

    /// The answer's status: one the request accepted.
    public var status: HTTPResponseStatus { response.status }

    /// The answer's header fields.
    public var headers: HTTPHeaders { response.headers }

    /// The body, whole, but never more than `limit` bytes and never past the deadline, as
    /// ``AsyncHTTPClient/HTTPClientResponse/collectBody(upTo:deadline:method:url:)`` reads it.
    ///
    /// - Throws: ``HTTPFailure``: `bodyTooLarge` (invalid), `deadlineExceeded` (transient), or the
    ///   classified connection error (`connectionReset` for a body cut short, …).
    public func collectBody(upTo limit: Int) async throws(HTTPFailure) -> ByteBuffer {
        try await response.collectBody(upTo: limit, deadline: deadline, method: method, url: url)
    }

    /// The body, read as ``collectBody(upTo:)`` reads it, decoded from JSON as `Value`.
    ///
    /// - Parameters:
    ///   - type: the type the body decodes to.
    ///   - limit: the most bytes read.
    ///   - expected: what the answer should have been, for the failure ("a JSON receipt").
    ///   - refusal: looks at the decoded value: `nil` accepts it; otherwise what was expected
    ///     instead, for the failure ("a receipt for report-1").
    /// - Throws: ``HTTPFailure``: the body's own failures, or `undecodable` (invalid) when it does
    ///   not decode as `Value` or `refusal` refuses what it decodes to.
    public func decodeBody<Value: Decodable>(
        as type: Value.Type,
        upTo limit: Int = 64 * 1024,
        expected: String,
        refusal: (Value) -> String? = { _ in nil }
    ) async throws(HTTPFailure) -> Value {
        try await response.decodeBody(
            as: type, upTo: limit, deadline: deadline, method: method, url: url, expected: expected, refusal: refusal
        )
    }

    /// Reads the body and drops it, so that the connection can carry the next request; a body
    /// over `limit`, too slow or cut short changes nothing (the status has said what the request
    /// needed), and the connection is then closed instead.
    public func discardBody(upTo limit: Int = HTTPFailure.errorBodyLimit) async {
        _ = try? await collectBody(upTo: limit)
    }
}
