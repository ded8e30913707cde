import HTTPTypes
import Hummingbird
import Synchronization

extension SandboxAPI {
    /// `GET /v1/resources/{name}`: 200 with a strong `ETag`, or 304 when `If-None-Match` matches.
    func getResource(_ request: Request, context: BasicRequestContext) async throws -> Response {
        try authorize(request, at: state.clock.now)
        let name = try context.parameters.require("name")
        guard let resource = state.resources.withLock({ $0[name] }) else {
            throw ProblemDetails.notFound("There is no resource named \(name).")
        }
        if let condition = request.headers[.ifNoneMatch], Self.ifNoneMatch(condition, matches: resource.etag) {
            var response = Response(status: .notModified, headers: [.eTag: resource.etag, .cacheControl: "no-cache"])
            response.headers[.contentLength] = nil
            return response
        }
        return Response(
            status: .ok,
            headers: [.contentType: resource.contentType, .eTag: resource.etag, .cacheControl: "no-cache"],
            body: .init(byteBuffer: resource.content)
        )
    }

    /// Whether an `If-None-Match` field value matches `etag`, by weak comparison (RFC 9110 §13.1.2).
    static func ifNoneMatch(_ condition: String, matches etag: String) -> Bool {
        let condition = condition.trimmingSpaces
        if condition == "*" { return true }
        let opaque = etag.hasPrefix("W/") ? etag.dropFirst(2) : etag[...]
        for candidate in condition.split(separator: ",") {
            var tag = Substring(String(candidate).trimmingSpaces)
            if tag.hasPrefix("W/") { tag = tag.dropFirst(2) }
            if tag == opaque { return true }
        }
        return false
    }
}
