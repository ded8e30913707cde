import NIOCore
import NIOHTTP1
import Testing

@testable import Sandbox

@Suite(.timeLimit(.minutes(1)))
struct ResourceEndpointTests {
    @Test func servesAStrongETagAndAnswers304WhenItMatches() async throws {
        try await RunningSandbox.with { sandbox in
            let auth = ("Authorization", "Bearer \(try await sandbox.token())")
            let first = try await sandbox.send(.GET, "/v1/resources/motd", headers: [auth])
            #expect(first.status == 200)
            #expect(first.text == "Welcome to the errorbus sandbox.\n")
            let etag = try #require(first.headers.first(name: "ETag"))
            #expect(etag.hasPrefix("\"") && !etag.hasPrefix("W/"))

            let unchanged = try await sandbox.send(.GET, "/v1/resources/motd", headers: [auth, ("If-None-Match", etag)])
            #expect(unchanged.status == 304)
            #expect(unchanged.body.readableBytes == 0)
            #expect(unchanged.headers.first(name: "ETag") == etag)

            let set = try await sandbox.send(
                .PUT,
                "/admin/resources/motd",
                headers: [("Content-Type", "text/plain")],
                body: ByteBuffer(string: "Maintenance tonight.\n")
            )
            #expect(set.status == 200)
            let changed = try await sandbox.send(.GET, "/v1/resources/motd", headers: [auth, ("If-None-Match", etag)])
            #expect(changed.status == 200)
            #expect(changed.text == "Maintenance tonight.\n")
            #expect(changed.headers.first(name: "ETag") != etag)
            #expect(changed.headers.first(name: "Content-Type") == "text/plain")
        }
    }

    @Test func unknownResourceIs404Problem() async throws {
        try await RunningSandbox.with { sandbox in
            let answer = try await sandbox.send(.GET, "/v1/resources/nope", headers: [("Authorization", "Bearer \(try await sandbox.token())")])
            #expect(answer.status == 404)
            #expect(answer.headers.first(name: "Content-Type") == "application/problem+json")
        }
    }

    @Test func healthzAnswers204() async throws {
        try await RunningSandbox.with { sandbox in
            let answer = try await sandbox.send(.GET, "/healthz")
            #expect(answer.status == 204)
            #expect(answer.headers.first(name: "Content-Length") == nil)
        }
    }

    @Test(arguments: [
        (#""abc""#, #""abc""#, true),
        (#"W/"abc""#, #""abc""#, true),
        (#""x", "abc""#, #""abc""#, true),
        ("*", #""abc""#, true),
        (#""abcd""#, #""abc""#, false),
    ])
    func ifNoneMatchUsesWeakComparison(condition: String, etag: String, matches: Bool) {
        #expect(SandboxAPI.ifNoneMatch(condition, matches: etag) == matches)
    }
}
