public import AsyncHTTPClient
import Foundation
public import NIOCore
import NIOHTTP1

extension HTTPClientResponse {
    /// The body, read as ``collectBody(upTo:deadline:method:url:)`` reads it (bounded in size and
    /// time), decoded from JSON as `Value`.
    ///
    /// - Parameters:
    ///   - type: the type the body decodes to.
    ///   - limit: the most bytes read.
    ///   - deadline: when reading gives up.
    ///   - method: the request method, for the failure.
    ///   - url: the request URL, for the failure.
    ///   - expected: what the answer should have been, for the failure ("an OAuth token
    ///     response").
    ///   - refusal: looks at the decoded value: `nil` accepts it; otherwise what was expected
    ///     instead, for the failure ("a bearer token").
    /// - Throws: ``HTTPFailure``: the body's own failures, or `undecodable` (invalid) when it does
    ///   not decode as `Value` or `refusal` refuses what it decodes to.
    public func decodeBody<Value: Decodable>(
        as type: Value.Type,
        upTo limit: Int = 64 * 1024,
        deadline: NIODeadline,
        method: String,
        url: String,
        expected: String,
        refusal: (Value) -> String? = { _ in nil }
    ) async throws(HTTPFailure) -> Value {
        let body = try await collectBody(upTo: limit, deadline: deadline, method: method, url: url)
        func undecodable(_ expected: String, _ error: (any Error)? = nil) -> HTTPFailure {
            HTTPFailure.undecodable(
                method: method, url: url, status: Int(status.code),
                contentType: headers.first(name: "Content-Type"), body: body,
                expected: expected, error: error
            )
        }
        let value: Value
        do {
            value = try JSONDecoder().decode(Value.self, from: Data(body.readableBytesView))
        } catch {
            throw undecodable(expected, error)
        }
        if let refused = refusal(value) { throw undecodable(refused) }
        return value
    }
}
