import HTTPTypes
import Hummingbird
import NIOCore

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// The admin API under `/admin`: faults, counters, stored items and resources, all JSON.
///
/// Never faulted and never counted (``FaultInjectionMiddleware`` lets `/admin` through).
/// Documented in `docs/sandbox.md`.
struct AdminAPI: Sendable {
    let state: SandboxState

    /// Adds the admin routes to `router`.
    func register(on router: Router<BasicRequestContext>) {
        let admin = router.group("admin")
        admin.get("faults") { _, _ in listFaults() }
        admin.post("faults") { request, _ in try await addFaults(request) }
        admin.delete("faults") { request, _ in removeFaults(request) }
        admin.delete("faults/:id") { _, context in try removeFault(context) }
        admin.get("stats") { request, _ in stats(request) }
        admin.post("reset") { _, _ in
            state.reset()
            return SandboxAPI.noContent()
        }
        admin.get("capacity") { _, _ in capacityReport() }
        admin.put("capacity") { request, _ in try await setCapacity(request) }
        admin.delete("capacity") { _, _ in
            state.capacity.set(nil, at: state.clock.now)
            return SandboxAPI.noContent()
        }
        admin.get("items") { _, _ in listItems() }
        admin.get("items/:id") { _, context in try item(context) }
        admin.get("resources") { _, _ in listResources() }
        admin.put("resources/:name") { request, context in try await setResource(request, context: context) }
    }

    /// The largest admin request body read.
    static let maxBodyBytes = 16 * 1024 * 1024

    /// `value` as a JSON response with sorted keys.
    static func json(_ value: some Encodable, status: HTTPResponse.Status = .ok) -> Response {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        do {
            let data = try encoder.encode(value)
            return Response(
                status: status,
                headers: [.contentType: "application/json"],
                body: .init(byteBuffer: ByteBuffer(bytes: data))
            )
        } catch {
            return ProblemDetails(status: .internalServerError, detail: "Could not encode the answer: \(error)")
                .response(instance: nil)
        }
    }
}
