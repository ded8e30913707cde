#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// An RFC 6749 §5.2 error answer of an OAuth token endpoint:
/// `{"error":"invalid_client","error_description":"…"}` as `application/json`.
struct OAuthErrorBody: Sendable, Hashable, Decodable {
    /// `invalid_client`, `invalid_grant`, `invalid_request`, …
    var error: String
    /// For a person, when the server gave one.
    var errorDescription: String?

    private enum CodingKeys: String, CodingKey {
        case error
        case errorDescription = "error_description"
    }

    /// `error_description (error)`, or the error code alone.
    var explanation: String {
        guard var description = errorDescription, !description.isEmpty else { return error }
        if description.hasSuffix(".") { description.removeLast() }
        return "\(description) (\(error))"
    }

    /// The OAuth error in `body` when it is JSON with a string `error`; `nil` otherwise.
    static func parse(contentType: String?, body: [UInt8]) -> OAuthErrorBody? {
        guard let contentType, MediaType.isJSON(contentType), !body.isEmpty else { return nil }
        return try? JSONDecoder().decode(OAuthErrorBody.self, from: Data(body))
    }
}
