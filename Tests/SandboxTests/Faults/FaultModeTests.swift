import AsyncHTTPClient
import Foundation
import NIOCore
import NIOHTTP1
import Testing

@testable import Sandbox

/// Each fault mode as an HTTP client sees it.
@Suite(.timeLimit(.minutes(1)))
struct FaultModeTests {
    @Test func downResetsTheConnection() async throws {
        try await RunningSandbox.with { sandbox in
            try await sandbox.fault(#"{"route":"healthz","mode":"down"}"#)
            let error = await #expect(throws: IOError.self) {
                try await sandbox.send(.GET, "/healthz")
            }
            #expect(error?.errnoCode == ECONNRESET)
            // Other routes are untouched, and the reset was counted.
            #expect(try await sandbox.send(.POST, "/oauth/token").status == 401)
            let stats = try await sandbox.stats()
            #expect(stats.requests.byRoute["healthz"]?["reset"] ?? 0 >= 1)
            #expect(stats.requests.byRoute["healthz"]?.keys.sorted() == ["reset"])
        }
    }

    @Test func downIsATCPResetAfterTheWholeRequest() async throws {
        try await RunningSandbox.with { sandbox in
            try await sandbox.fault(#"{"route":"items","mode":"down"}"#)
            let result = try RawSocket.exchange(
                port: sandbox.port,
                request: "PUT /v1/items/a HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\nhello"
            )
            #expect(result == .reset)
            #expect(try await sandbox.stats().requests.byRoute["items"] == ["reset": 1])
        }
    }

    @Test func statusAnswersProblemJSONWithRetryAfter() async throws {
        try await RunningSandbox.with { sandbox in
            try await sandbox.fault(#"{"route":"all","mode":"status","status":503,"retryAfter":5,"detail":"Back soon."}"#)
            let answer = try await sandbox.send(.GET, "/healthz")
            #expect(answer.status == 503)
            #expect(answer.headers.first(name: "Retry-After") == "5")
            #expect(answer.headers.first(name: "Content-Type") == "application/problem+json")
            let problem = try answer.object()
            #expect(problem["status"] as? Int == 503)
            #expect(problem["title"] as? String == "Service Unavailable")
            #expect(problem["detail"] as? String == "Back soon.")
            #expect(problem["instance"] as? String == "/healthz")
            #expect(problem["type"] is String)
        }
    }

    @Test func retryAfterCanBeAnHTTPDate() async throws {
        try await RunningSandbox.with { sandbox in
            try await sandbox.fault(#"{"route":"items","mode":"status","status":429,"retryAfter":120,"retryAfterForm":"httpDate"}"#)
            let answer = try await sandbox.send(.PUT, "/v1/items/a", body: ByteBuffer(string: "x"))
            #expect(answer.status == 429)
            let value = try #require(answer.headers.first(name: "Retry-After"))
            let formatter = DateFormatter()
            formatter.locale = Locale(identifier: "en_US_POSIX")
            formatter.timeZone = TimeZone(identifier: "GMT")
            formatter.dateFormat = "EEE, dd MMM yyyy HH:mm:ss 'GMT'"
            let date = try #require(formatter.date(from: value), "not an IMF-fixdate: \(value)")
            #expect(abs(date.timeIntervalSinceNow - 120) < 5)
        }
    }

    @Test func invalidAnswers422WithTheOperatorText() async throws {
        try await RunningSandbox.with { sandbox in
            try await sandbox.fault(#"{"route":"items","mode":"invalid","detail":"Field 'title' is required."}"#)
            let answer = try await sandbox.send(.PUT, "/v1/items/a", body: ByteBuffer(string: "x"))
            #expect(answer.status == 422)
            #expect(try answer.object()["detail"] as? String == "Field 'title' is required.")

            try await sandbox.fault(#"{"route":"items","mode":"invalid","status":413}"#)
            #expect(try await sandbox.send(.PUT, "/v1/items/a", body: ByteBuffer(string: "x")).status == 413)
        }
    }

    @Test func captivePortalRedirectsToALoginPage() async throws {
        try await RunningSandbox.with { sandbox in
            try await sandbox.fault(#"{"route":"healthz","mode":"captivePortal"}"#)
            let answer = try await sandbox.send(.GET, "/healthz")
            #expect(answer.status == 302)
            #expect(answer.headers.first(name: "Location") == "/login")
        }
        try await RunningSandbox.with(redirects: .follow(max: 3, allowCycles: false)) { sandbox in
            try await sandbox.fault(#"{"route":"healthz","mode":"captivePortal"}"#)
            let answer = try await sandbox.send(.GET, "/healthz")
            #expect(answer.status == 200)
            #expect(answer.headers.first(name: "Content-Type")?.hasPrefix("text/html") == true)
            #expect(answer.text.contains("<html"))
            let stats = try await sandbox.stats()
            #expect(stats.requests.byRoute["healthz"] == ["302": 1])
            #expect(stats.requests.byRoute["other"] == ["200": 1])
        }
    }

    @Test func captivePortalCanServeItsPageInPlace() async throws {
        try await RunningSandbox.with { sandbox in
            try await sandbox.fault(#"{"route":"healthz","mode":"captivePortal","portal":"page"}"#)
            let answer = try await sandbox.send(.GET, "/healthz")
            #expect(answer.status == 200)
            #expect(answer.headers.first(name: "Content-Type")?.hasPrefix("text/html") == true)
        }
    }

    @Test func garbageIs200InTheWrongContentType() async throws {
        try await RunningSandbox.with { sandbox in
            try await sandbox.fault(#"{"route":"token","mode":"garbage"}"#)
            let answer = try await sandbox.send(.POST, "/oauth/token", body: ByteBuffer(string: "grant_type=client_credentials"))
            #expect(answer.status == 200)
            #expect(answer.headers.first(name: "Content-Type")?.hasPrefix("application/json") == false)
            #expect((try? JSONSerialization.jsonObject(with: Data(answer.body.readableBytesView))) == nil)
        }
    }

    @Test func truncatedClosesBeforeTheDeclaredLength() async throws {
        try await RunningSandbox.with { sandbox in
            try await sandbox.fault(#"{"route":"resources","mode":"truncated"}"#)
            await #expect(throws: HTTPParserError.invalidEOFState) {
                try await sandbox.send(.GET, "/v1/resources/motd")
            }
            #expect(try await sandbox.stats().requests.byRoute["resources"] == ["200": 1])
        }
    }

    @Test func hugeStreamsWithoutEnd() async throws {
        try await RunningSandbox.with { sandbox in
            try await sandbox.fault(#"{"route":"resources","mode":"huge"}"#)
            let response = try await sandbox.client.execute(
                HTTPClientRequest(url: sandbox.baseURL + "/v1/resources/motd"),
                timeout: .seconds(30)
            )
            #expect(response.status.code == 200)
            #expect(response.headers.first(name: "Content-Length") == nil)
            var received = 0
            for try await chunk in response.body {
                received += chunk.readableBytes
                if received >= 8 * 1024 * 1024 { break }
            }
            #expect(received >= 8 * 1024 * 1024)
        }
    }

    @Test func hugeWithABytesCountDeclaresAndSendsThem() async throws {
        try await RunningSandbox.with { sandbox in
            try await sandbox.fault(#"{"route":"resources","mode":"huge","bytes":3000000}"#)
            let answer = try await sandbox.send(.GET, "/v1/resources/motd")
            #expect(answer.headers.first(name: "Content-Length") == "3000000")
            #expect(answer.body.readableBytes == 3_000_000)
        }
    }

    @Test func noneExemptsARouteFromAnAllRule() async throws {
        try await RunningSandbox.with { sandbox in
            try await sandbox.fault(#"{"route":"all","mode":"status","status":500}"#)
            try await sandbox.fault(#"{"route":"healthz","mode":"none"}"#)
            #expect(try await sandbox.send(.GET, "/healthz").status == 204)
            #expect(try await sandbox.send(.POST, "/oauth/token").status == 500)
        }
    }
}
