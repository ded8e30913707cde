import AsyncHTTPClient
import ErrorBus
import ErrorBusDaemon
import ErrorBusHTTP
import Foundation
import NIOCore
import NIOHTTP1
import NIOPosix
import Testing

/// Real AsyncHTTPClient requests into each of the sandbox's fault modes, classified the way the
/// services classify them.
@Suite(.timeLimit(.minutes(1)))
struct HTTPFailureSandboxTests {
    // MARK: - The connection

    @Test func downIsAConnectionReset() async throws {
        try await LiveSandbox.with { sandbox in
            try await sandbox.fault(#"{"route":"all","mode":"down"}"#)
            let failure = try #require(await sandbox.failure(.GET, "/healthz", expecting: [204]))
            #expect(failure.category == .transient)
            #expect(failure.cause == "connectionReset")
            #expect(failure.scope == sandbox.origin)
            #expect(failure.operatorText.title == "Connection to the API broken")
            #expect(failure.operatorText.message.contains("reset the connection"))
            #expect(failure.underlying is IOError)
        }
    }

    @Test func aClosedPortIsConnectionRefused() async throws {
        try await LiveSandbox.with { sandbox in
            let port = try ClosedPort.find()
            let failure = try #require(await LiveSandbox.failure(of: .GET, url: "http://127.0.0.1:\(port)/healthz", client: sandbox.client))
            #expect(failure.category == .unreachable)
            #expect(failure.cause == "connectionRefused")
            #expect(failure.scope == "http://127.0.0.1:\(port)", "a server on another port is another scope")
            #expect(failure.operatorText.title == "API refused the connection")
            #expect(failure.operatorText.message.contains("127.0.0.1:\(port)"))
        }
    }

    @Test func aNameUnderDotInvalidIsADNSFailure() async throws {
        try await LiveSandbox.with { sandbox in
            // RFC 6761 §6.4: names under .invalid never resolve.
            let url = "http://errorbus-test.invalid/healthz"
            let failure = try #require(await LiveSandbox.failure(of: .GET, url: url, client: sandbox.client))
            #expect(failure.category == .unreachable)
            #expect(failure.cause == "dnsFailure")
            #expect(failure.scope == "http://errorbus-test.invalid")
            #expect(failure.operatorText.title == "API host not found")
            #expect(failure.operatorText.message.contains("errorbus-test.invalid could not be resolved"))
            #expect(failure.underlying is NIOConnectionError)
        }
    }

    @Test func truncatedBodyIsAConnectionReset() async throws {
        try await LiveSandbox.with { sandbox in
            try await sandbox.fault(#"{"route":"token","mode":"truncated"}"#)
            let failure = try #require(await sandbox.failure(.POST, "/oauth/token"))
            #expect(failure.category == .transient)
            #expect(failure.cause == "connectionReset")
            #expect(failure.status == 200)
        }
    }

    // MARK: - Statuses

    @Test func status500IsTransient() async throws {
        try await LiveSandbox.with { sandbox in
            try await sandbox.fault(#"{"route":"items","mode":"status","status":500,"detail":"Database on fire."}"#)
            let failure = try #require(await sandbox.failure(.PUT, "/v1/items/a", body: ByteBuffer(string: "x"), expecting: [200, 201]))
            #expect(failure.category == .transient)
            #expect(failure.cause == "http500")
            #expect(failure.status == 500)
            #expect(failure.operatorText.title == "API server error")
            #expect(failure.operatorText.message == "127.0.0.1 failed to handle PUT /v1/items/a: 500 Internal Server Error: Database on fire.")
        }
    }

    @Test func status503WithRetryAfterIsRateLimited() async throws {
        try await LiveSandbox.with { sandbox in
            try await sandbox.fault(#"{"route":"items","mode":"status","status":503,"retryAfter":5,"detail":"Scheduled maintenance."}"#)
            let failure = try #require(await sandbox.failure(.PUT, "/v1/items/a", body: ByteBuffer(string: "x"), expecting: [200, 201]))
            #expect(failure.category == .rateLimited(retryAfter: .seconds(5)))
            #expect(failure.cause == "http503")
            #expect(failure.retryAfter == .seconds(5))
            #expect(failure.operatorText.message.contains("asked to wait 5 s: Scheduled maintenance."))
        }
    }

    @Test func status503WithoutRetryAfterIsTransient() async throws {
        try await LiveSandbox.with { sandbox in
            try await sandbox.fault(#"{"route":"items","mode":"status","status":503}"#)
            let failure = try #require(await sandbox.failure(.PUT, "/v1/items/a", body: ByteBuffer(string: "x"), expecting: [200, 201]))
            #expect(failure.category == .transient)
            #expect(failure.cause == "http503")
        }
    }

    @Test func status429WithAnHTTPDateIsRateLimitedForThatLong() async throws {
        try await LiveSandbox.with { sandbox in
            try await sandbox.fault(#"{"route":"items","mode":"status","status":429,"retryAfter":120,"retryAfterForm":"httpDate"}"#)
            let failure = try #require(await sandbox.failure(.PUT, "/v1/items/a", body: ByteBuffer(string: "x"), expecting: [200, 201]))
            #expect(failure.category.kind == .rateLimited)
            #expect(failure.cause == "http429")
            let wait = try #require(failure.retryAfter)
            // The sandbox rounds to whole seconds and the request took a moment.
            #expect(wait > .seconds(115) && wait <= .seconds(121))
            #expect(failure.operatorText.title == "API rate limit reached")
        }
    }

    @Test func anExpiredTokenIsUnauthenticatedWithTheServersReason() async throws {
        try await LiveSandbox.with { sandbox in
            let token = try await sandbox.token()
            try await sandbox.fault(#"{"mode":"expireTokens"}"#)
            let failure = try #require(
                await sandbox.failure(.GET, "/v1/resources/settings", headers: [("Authorization", "Bearer \(token)")])
            )
            #expect(failure.category == .unauthenticated)
            #expect(failure.cause == "http401")
            #expect(failure.scope == nil, "a 401 is grouped by the job's auth realm, not by host")
            #expect(failure.operatorText.title == "Access token refused")
            #expect(failure.operatorText.message.contains("(invalid_token)"))
        }
    }

    @Test func rejectedClientCredentialsNameTheOAuthError() async throws {
        try await LiveSandbox.with { sandbox in
            try await sandbox.fault(#"{"route":"token","mode":"rejectCredentials"}"#)
            let failure = try #require(
                await sandbox.failure(
                    .POST, "/oauth/token",
                    headers: [("Content-Type", "application/x-www-form-urlencoded")],
                    body: ByteBuffer(string: "grant_type=client_credentials&client_id=errorbus&client_secret=sandbox-secret")
                )
            )
            #expect(failure.category == .unauthenticated)
            #expect(failure.operatorText.title == "Credentials refused")
            #expect(failure.operatorText.message.contains("(invalid_client)"))
        }
    }

    @Test func anInvalidPayloadIsDeadLetteredWithTheProblemDetail() async throws {
        try await LiveSandbox.with { sandbox in
            try await sandbox.fault(#"{"route":"items","mode":"invalid","detail":"The title field is required."}"#)
            let failure = try #require(await sandbox.failure(.PUT, "/v1/items/a", body: ByteBuffer(string: "x"), expecting: [200, 201]))
            #expect(failure.category == .invalid(reason: "422 Unprocessable Content: The title field is required."))
            #expect(failure.cause == "http422")
            #expect(failure.problem?.detail == "The title field is required.")
            #expect(failure.problem?.instance == "/v1/items/a")
            #expect(failure.operatorText.title == "Upload rejected")
            #expect(failure.operatorText.message == "127.0.0.1 rejected PUT /v1/items/a with 422 Unprocessable Content: The title field is required.")
        }
    }

    // MARK: - Bodies

    @Test func garbageWhereJSONWasExpectedIsUndecodable() async throws {
        try await LiveSandbox.with { sandbox in
            try await sandbox.fault(#"{"route":"token","mode":"garbage"}"#)
            let failure = try #require(await sandbox.failure(.POST, "/oauth/token"))
            #expect(failure.category == .invalid(reason: "answer is not JSON"))
            #expect(failure.cause == "undecodableResponse")
            #expect(failure.operatorText.title == "Answer not understood")
            #expect(failure.operatorText.message.contains("with 200 and an HTML page instead of JSON"))
        }
    }

    @Test func aDecodedBodyTheCallerRefusesIsUndecodableSayingWhatWasExpected() async throws {
        try await LiveSandbox.with { sandbox in
            try await sandbox.fault(#"{"route":"items","mode":"wrongReceipt"}"#)
            let url = sandbox.baseURL + "/v1/items/a"
            var request = HTTPClientRequest(url: url)
            request.method = .PUT
            request.body = .bytes(ByteBuffer(string: "x"))
            let deadline = NIODeadline.now() + .seconds(10)
            let response = try await sandbox.client.execute(request, deadline: deadline)
            struct Receipt: Decodable { let id: String }
            do throws(HTTPFailure) {
                _ = try await response.decodeBody(as: Receipt.self, deadline: deadline, method: "PUT", url: url, expected: "the item's receipt") {
                    $0.id == "a" ? nil : "the receipt for item a (it named \($0.id))"
                }
                Issue.record("a receipt for another item was accepted")
            } catch {
                #expect(error.category == .invalid(reason: "answer is not the receipt for item a (it named not-the-item-you-sent)"))
                #expect(error.cause == "undecodableResponse")
                #expect(error.operatorText.message == "127.0.0.1 answered PUT /v1/items/a with 201 and a application/json body instead of the receipt for item a (it named not-the-item-you-sent).")
            }
        }
    }

    @Test func anEndlessBodyIsCutAtTheLimit() async throws {
        try await LiveSandbox.with { sandbox in
            try await sandbox.fault(#"{"route":"token","mode":"huge"}"#)
            let started = ContinuousClock.now
            let failure = try #require(await sandbox.failure(.POST, "/oauth/token"))
            #expect(failure.category == .invalid(reason: "answer larger than the 64 KiB limit"))
            #expect(failure.cause == "bodyTooLarge")
            #expect(failure.operatorText.message.contains("more than 64 KiB"))
            #expect(ContinuousClock.now - started < .seconds(5))
        }
    }

    @Test func anAnnouncedHugeBodyIsRefusedWithoutReading() async throws {
        try await LiveSandbox.with { sandbox in
            let token = try await sandbox.token()
            try await sandbox.fault(#"{"route":"resources","mode":"huge","bytes":5000000000}"#)
            let failure = try #require(
                await sandbox.failure(.GET, "/v1/resources/motd", headers: [("Authorization", "Bearer \(token)")], bodyLimit: 1 << 20)
            )
            #expect(failure.cause == "bodyTooLarge")
            #expect(failure.category.kind == .invalid)
            #expect(failure.operatorText.message.contains("a body of 4.7 GiB, over the 1 MiB"))
        }
    }

    // MARK: - Time

    @Test func aSlowAnswerPastTheDeadlineIsTransient() async throws {
        try await LiveSandbox.with { sandbox in
            try await sandbox.fault(#"{"route":"healthz","mode":"slow","delayMs":12000}"#)
            let started = ContinuousClock.now
            let failure = try #require(await sandbox.failure(.GET, "/healthz", expecting: [204], timeout: .milliseconds(500)))
            #expect(failure.category == .transient)
            #expect(failure.cause == "deadlineExceeded")
            #expect(failure.operatorText.title == "API answer too slow")
            #expect(failure.underlying as? HTTPClientError == .deadlineExceeded)
            // Ended by the deadline, not by the answer (which comes after 12 s): the margin is
            // wide so that a loaded machine cannot blur the two.
            #expect(ContinuousClock.now - started < .seconds(9))
        }
    }

    @Test func aTrickledBodyPastTheDeadlineIsTransient() async throws {
        try await LiveSandbox.with { sandbox in
            let token = try await sandbox.token()
            try await sandbox.fault(#"{"route":"resources","mode":"slow","delayMs":12000,"trickle":true}"#)
            let started = ContinuousClock.now
            let failure = try #require(
                await sandbox.failure(
                    .GET, "/v1/resources/settings", headers: [("Authorization", "Bearer \(token)")], timeout: .milliseconds(1500)
                )
            )
            #expect(failure.category == .transient)
            #expect(failure.cause == "deadlineExceeded")
            #expect(failure.status == 200, "the head arrived in time; the body did not")
            // Ended by the deadline, not by the body's end (which comes after 12 s).
            #expect(ContinuousClock.now - started < .seconds(9))
        }
    }

    @Test func cancellingTheCallerStopsReadingTheBody() async throws {
        try await LiveSandbox.with { sandbox in
            let token = try await sandbox.token()
            // The body takes 12 s to arrive and the deadline is a minute away: only the
            // caller's cancellation can end the read early.
            try await sandbox.fault(#"{"route":"resources","mode":"slow","delayMs":12000,"trickle":true}"#)
            let url = sandbox.baseURL + "/v1/resources/settings"
            var request = HTTPClientRequest(url: url)
            request.headers.add(name: "Authorization", value: "Bearer \(token)")
            let response = try await sandbox.client.execute(request, timeout: .seconds(60))
            let deadline = NIODeadline.now() + .seconds(60)
            let reading = Task {
                try await response.collectBody(upTo: 1 << 20, deadline: deadline, method: "GET", url: url)
            }
            reading.cancel()
            // Without the cancellation reaching the read, the whole body would come back.
            let result = await reading.result
            #expect(throws: HTTPFailure.self) { try result.get() }
        }
    }

    // MARK: - Captive portal

    @Test func aPortalRedirectIsUnreachableNamingTheLocation() async throws {
        try await LiveSandbox.with { sandbox in
            try await sandbox.fault(#"{"route":"items","mode":"captivePortal"}"#)
            let failure = try #require(await sandbox.failure(.PUT, "/v1/items/a", body: ByteBuffer(string: "x"), expecting: [200, 201]))
            #expect(failure.category == .unreachable)
            #expect(failure.cause == "captivePortal")
            #expect(failure.status == 302)
            #expect(failure.scope == sandbox.origin)
            #expect(failure.operatorText.title == "Redirected away from the API")
            #expect(failure.operatorText.message.contains("redirecting to /login: a captive portal or proxy answers instead of the API"))
        }
    }

    @Test func aPortalPageWhereJSONWasExpectedIsUndecodableAndSaysWhatItWas() async throws {
        try await LiveSandbox.with { sandbox in
            let token = try await sandbox.token()
            try await sandbox.fault(#"{"route":"resources","mode":"captivePortal","portal":"page"}"#)
            let failure = try #require(
                await sandbox.failure(.GET, "/v1/resources/settings", headers: [("Authorization", "Bearer \(token)")])
            )
            #expect(failure.cause == "undecodableResponse")
            #expect(failure.category.kind == .invalid)
            #expect(failure.operatorText.message.contains("an HTML page titled “Sign in to Guest Wi-Fi” instead of JSON"))
            #expect(failure.operatorText.message.contains("captive portal"))
        }
    }
}
