import HTTPTypes
import Hummingbird

/// The remote API the errorbus services speak (docs/sandbox.md, "The API it serves"): token, items,
/// resources and the probe, plus the captive portal's `/login` page.
///
/// Faults and counting happen around it, in ``FaultInjectionMiddleware``; the handlers here only
/// ever answer the way a healthy server would.
struct SandboxAPI: Sendable {
    let state: SandboxState

    /// Adds the API's routes to `router`.
    func register(on router: Router<BasicRequestContext>) {
        router.post("oauth/token") { request, context in
            try await issueToken(request, context: context)
        }
        router.put("v1/items/:id") { request, context in
            try await putItem(request, context: context)
        }
        router.get("v1/resources/:name") { request, context in
            try await getResource(request, context: context)
        }
        router.get("healthz") { _, _ in
            SandboxAPI.noContent()
        }
        router.get("login") { _, _ in
            SandboxAPI.portalPage()
        }
    }

    /// 204 without a `Content-Length` (RFC 9110 §8.6 forbids one on 204).
    static func noContent() -> Response {
        var response = Response(status: .noContent)
        response.headers[.contentLength] = nil
        return response
    }
}
