import ErrorBusTesting
import Foundation
import NIOCore
import NIOHTTP1
import Testing

@testable import Sandbox

@Suite(.timeLimit(.minutes(1)))
struct TokenEndpointTests {
    private static let form = ("Content-Type", "application/x-www-form-urlencoded")

    private static func basic(_ id: String, _ secret: String) -> (String, String) {
        ("Authorization", "Basic " + Data("\(id):\(secret)".utf8).base64EncodedString())
    }

    @Test func issuesABearerTokenForBasicCredentials() async throws {
        try await RunningSandbox.with(configuration: .init(tokenLifetime: .seconds(900))) { sandbox in
            let answer = try await sandbox.send(
                .POST,
                "/oauth/token",
                headers: [Self.basic("errorbus", "sandbox-secret"), Self.form],
                body: ByteBuffer(string: "grant_type=client_credentials")
            )
            #expect(answer.status == 200)
            #expect(answer.headers.first(name: "Cache-Control") == "no-store")
            let body = try answer.object()
            #expect(body["token_type"] as? String == "Bearer")
            #expect(body["expires_in"] as? Int == 900)
            #expect((body["access_token"] as? String)?.isEmpty == false)
        }
    }

    @Test func acceptsCredentialsInTheForm() async throws {
        try await RunningSandbox.with { sandbox in
            let answer = try await sandbox.send(
                .POST,
                "/oauth/token",
                headers: [Self.form],
                body: ByteBuffer(string: "grant_type=client_credentials&client_id=errorbus&client_secret=sandbox%2Dsecret")
            )
            #expect(answer.status == 200)
        }
    }

    @Test func rejectsAWrongSecretAsInvalidClient() async throws {
        try await RunningSandbox.with { sandbox in
            let answer = try await sandbox.send(
                .POST,
                "/oauth/token",
                headers: [Self.basic("errorbus", "guess"), Self.form],
                body: ByteBuffer(string: "grant_type=client_credentials")
            )
            #expect(answer.status == 401)
            #expect(answer.headers.first(name: "WWW-Authenticate")?.hasPrefix("Basic") == true)
            #expect(try answer.object()["error"] as? String == "invalid_client")
        }
    }

    @Test(arguments: [
        ("grant_type=password", 400, "unsupported_grant_type"),
        ("scope=x", 400, "invalid_request"),
        ("grant_type=client_credentials&grant_type=client_credentials", 400, "invalid_request"),
    ])
    func answersRFC6749Errors(body: String, status: Int, error: String) async throws {
        try await RunningSandbox.with { sandbox in
            let answer = try await sandbox.send(
                .POST,
                "/oauth/token",
                headers: [Self.basic("errorbus", "sandbox-secret"), Self.form],
                body: ByteBuffer(string: body)
            )
            #expect(answer.status == status)
            #expect(try answer.object()["error"] as? String == error)
        }
    }

    @Test func rejectCredentialsFaultAnswersInvalidClient() async throws {
        try await RunningSandbox.with { sandbox in
            try await sandbox.fault(#"{"route":"token","mode":"rejectCredentials"}"#)
            let answer = try await sandbox.send(
                .POST,
                "/oauth/token",
                headers: [Self.basic("errorbus", "sandbox-secret"), Self.form],
                body: ByteBuffer(string: "grant_type=client_credentials")
            )
            #expect(answer.status == 401)
            #expect(try answer.object()["error"] as? String == "invalid_client")
            #expect(try await sandbox.stats().tokens.issued == 0)
        }
    }

    @Test func tokensExpireAfterTheirLifetime() async throws {
        let clock = ManualClock()
        try await RunningSandbox.with(clock: SandboxClock(clock), configuration: .init(tokenLifetime: .seconds(60))) { sandbox in
            let token = try await sandbox.token()
            #expect(try await sandbox.upload("a", key: "k1", body: ByteBuffer(string: "x"), token: token).status == 201)
            clock.advance(by: .seconds(60))
            let answer = try await sandbox.upload("a", key: "k2", body: ByteBuffer(string: "x"), token: token)
            #expect(answer.status == 401)
            #expect(answer.headers.first(name: "WWW-Authenticate")?.contains(#"error="invalid_token""#) == true)
            #expect(try answer.object()["detail"] as? String == "The access token expired.")
        }
    }

    @Test func expireTokensInvalidatesEveryIssuedToken() async throws {
        try await RunningSandbox.with { sandbox in
            let first = try await sandbox.token()
            let second = try await sandbox.token()
            let expired = try await sandbox.fault(#"{"mode":"expireTokens"}"#)
            #expect(try expired.object()["expiredTokens"] as? Int == 2)
            for token in [first, second] {
                let answer = try await sandbox.send(.GET, "/v1/resources/motd", headers: [("Authorization", "Bearer \(token)")])
                #expect(answer.status == 401)
                #expect(answer.headers.first(name: "WWW-Authenticate")?.hasPrefix(#"Bearer realm="errorbus-sandbox", error="invalid_token""#) == true)
                #expect(answer.headers.first(name: "Content-Type") == "application/problem+json")
            }
            let fresh = try await sandbox.token()
            let answer = try await sandbox.send(.GET, "/v1/resources/motd", headers: [("Authorization", "Bearer \(fresh)")])
            #expect(answer.status == 200)
        }
    }
}
