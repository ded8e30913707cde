import Crypto
import Foundation
import NIOCore
import NIOHTTP1
import Testing

@testable import Sandbox

@Suite(.timeLimit(.minutes(1)))
struct ItemEndpointTests {
    private static func randomBody(_ count: Int) -> ByteBuffer {
        var generator = SystemRandomNumberGenerator()
        return ByteBuffer(bytes: (0..<count).map { _ in UInt8.random(in: 0...255, using: &generator) })
    }

    private static func sha256(_ buffer: ByteBuffer) -> String {
        SHA256.hash(data: Array(buffer.readableBytesView)).map { String(format: "%02x", $0) }.joined()
    }

    @Test func storesAnUploadThenAbsorbsItsDuplicate() async throws {
        try await RunningSandbox.with { sandbox in
            let token = try await sandbox.token()
            let body = Self.randomBody(4096)
            let first = try await sandbox.upload("report-1", key: "key-1", body: body, token: token)
            #expect(first.status == 201)
            #expect(first.headers.first(name: "Location") == "/v1/items/report-1")
            let again = try await sandbox.upload("report-1", key: "key-1", body: body, token: token)
            #expect(again.status == 200)

            let stored = try await sandbox.send(.GET, "/admin/items/report-1").json(StoredItem.self)
            #expect(stored.bytes == 4096)
            #expect(stored.sha256 == Self.sha256(body))
            #expect(stored.idempotencyKey == "key-1")

            let stats = try await sandbox.stats()
            #expect(stats.items.distinct == 1)
            #expect(stats.items.uploads == 1)
            #expect(stats.items.duplicatesAbsorbed == 1)
            #expect(stats.requests.byRoute["items"] == ["201": 1, "200": 1])
        }
    }

    @Test func rejectsAKeyReusedForOtherContent() async throws {
        try await RunningSandbox.with { sandbox in
            let token = try await sandbox.token()
            #expect(try await sandbox.upload("a", key: "k", body: ByteBuffer(string: "one"), token: token).status == 201)
            let reused = try await sandbox.upload("a", key: "k", body: ByteBuffer(string: "two"), token: token)
            #expect(reused.status == 422)
            #expect(reused.headers.first(name: "Content-Type") == "application/problem+json")
            #expect(try await sandbox.stats().items.keysReused == 1)
        }
    }

    @Test func needsATokenAndAnIdempotencyKey() async throws {
        try await RunningSandbox.with { sandbox in
            let anonymous = try await sandbox.send(.PUT, "/v1/items/a", headers: [("Idempotency-Key", "k")], body: ByteBuffer(string: "x"))
            #expect(anonymous.status == 401)
            #expect(anonymous.headers.first(name: "WWW-Authenticate")?.contains(#"error="invalid_token""#) == true)
            let token = try await sandbox.token()
            let keyless = try await sandbox.send(.PUT, "/v1/items/a", headers: [("Authorization", "Bearer \(token)")], body: ByteBuffer(string: "x"))
            #expect(keyless.status == 400)
            let problem = try keyless.object()
            #expect(problem["status"] as? Int == 400)
            #expect(problem["instance"] as? String == "/v1/items/a")
            #expect(problem["title"] as? String == "Bad Request")
        }
    }

    @Test func rejectsAnItemOverTheLimit() async throws {
        try await RunningSandbox.with(configuration: .init(maxItemBytes: 1000)) { sandbox in
            let token = try await sandbox.token()
            let answer = try await sandbox.upload("big", key: "k", body: Self.randomBody(1001), token: token)
            #expect(answer.status == 413)
            #expect(try await sandbox.stats().items.distinct == 0)
        }
    }
}
