import Crypto
import HTTPTypes
import Hummingbird
import NIOCore
import Synchronization

extension SandboxAPI {
    /// `PUT /v1/items/{id}`: stores the body under its `Idempotency-Key`.
    ///
    /// 201 for a new key, 200 for a key already stored with the same id and body (an absorbed
    /// duplicate), 422 for a key reused with another id or body. The body is hashed as it
    /// streams in, never buffered whole.
    func putItem(_ request: Request, context: BasicRequestContext) async throws -> Response {
        try authorize(request, at: state.clock.now)
        let id = try context.parameters.require("id")
        guard let key = request.headers[.idempotencyKey]?.trimmingSpaces, !key.isEmpty else {
            throw ProblemDetails.badRequest("The Idempotency-Key header is missing.")
        }
        guard key.utf8.count <= 256 else {
            throw ProblemDetails.badRequest("The Idempotency-Key header is longer than 256 bytes.")
        }
        let limit = state.configuration.maxItemBytes
        if let declared = request.headers[.contentLength].flatMap({ Int($0) }), declared > limit {
            throw Self.tooLarge(limit)
        }
        var hasher = SHA256()
        var count = 0
        for try await buffer in request.body {
            count += buffer.readableBytes
            guard count <= limit else { throw Self.tooLarge(limit) }
            buffer.withUnsafeReadableBytes { hasher.update(bufferPointer: $0) }
        }
        let sha256 = Hex.encode(hasher.finalize())
        let now = state.clock.now
        let outcome = state.items.withLock { $0.put(id: id, key: key, bytes: count, sha256: sha256, now: now) }
        switch outcome {
        case .stored(let item, _):
            var response = Self.itemResponse(item, status: .created)
            response.headers[.location] = "/v1/items/\(id)"
            return response
        case .duplicate(let item):
            return Self.itemResponse(item, status: .ok)
        case .keyReused(let firstItemID):
            throw ProblemDetails(
                type: "urn:errorbus:sandbox:idempotency-key-reused",
                title: "Idempotency-Key reused",
                status: .unprocessableContent,
                detail: "The Idempotency-Key \(key) was first used for item \(firstItemID) with a different body."
            )
        }
    }

    private static func itemResponse(_ item: StoredItem, status: HTTPResponse.Status) -> Response {
        let json =
            #"{"id":\#(JSONText.quote(item.id)),"bytes":\#(item.bytes),"sha256":"\#(item.sha256)","versions":\#(item.versions)}"#
        return Response(
            status: status,
            headers: [.contentType: "application/json"],
            body: .init(byteBuffer: ByteBuffer(string: json))
        )
    }

    private static func tooLarge(_ limit: Int) -> ProblemDetails {
        ProblemDetails(
            type: "urn:errorbus:sandbox:item-too-large",
            status: .contentTooLarge,
            detail: "Items are limited to \(limit) bytes."
        )
    }
}
