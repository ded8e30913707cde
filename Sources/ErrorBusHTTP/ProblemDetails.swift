#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// An RFC 9457 problem, as the API answers its errors (`application/problem+json`).
///
/// Every member is optional: a problem document may carry any subset, and extension members are
/// ignored.
public struct ProblemDetails: Sendable, Hashable, Decodable {
    /// A URI naming the kind of problem; `about:blank` when absent (RFC 9457 §3.1.1).
    public var type: String?
    /// A short summary of the kind of problem, e.g. "Validation failed".
    public var title: String?
    /// The HTTP status code the server meant.
    public var status: Int?
    /// What went wrong in this occurrence, for a person, e.g. "The title field is required."
    public var detail: String?
    /// A URI naming this occurrence, often the request path.
    public var instance: String?

    /// A problem with the members given.
    public init(type: String? = nil, title: String? = nil, status: Int? = nil, detail: String? = nil, instance: String? = nil) {
        self.type = type
        self.title = title
        self.status = status
        self.detail = detail
        self.instance = instance
    }

    /// The media type of a problem document.
    public static let mediaType = "application/problem+json"

    /// The problem in `body` when `contentType` says it is one and it decodes; `nil` otherwise.
    ///
    /// A problem without any of `title` and `detail` says nothing an operator can use and is
    /// treated as absent.
    public static func parse(contentType: String?, body: [UInt8]) -> ProblemDetails? {
        guard let contentType, MediaType.essence(of: contentType) == mediaType, !body.isEmpty else { return nil }
        guard let problem = try? JSONDecoder().decode(LenientProblem.self, from: Data(body)).problem else { return nil }
        guard problem.title?.isEmpty == false || problem.detail?.isEmpty == false else { return nil }
        return problem
    }

    /// Decodes each member on its own, so one of the wrong type (a string `status`, say) loses
    /// only that member rather than the whole problem.
    private struct LenientProblem: Decodable {
        var problem: ProblemDetails

        private enum Key: String, CodingKey { case type, title, status, detail, instance }

        init(from decoder: any Decoder) throws {
            let container = try decoder.container(keyedBy: Key.self)
            problem = ProblemDetails(
                type: try? container.decodeIfPresent(String.self, forKey: .type),
                title: try? container.decodeIfPresent(String.self, forKey: .title),
                status: try? container.decodeIfPresent(Int.self, forKey: .status),
                detail: try? container.decodeIfPresent(String.self, forKey: .detail),
                instance: try? container.decodeIfPresent(String.self, forKey: .instance)
            )
        }
    }
}
