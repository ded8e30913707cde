import AsyncHTTPClient
import ErrorBus
import ErrorBusHTTP
@testable import ErrorBusDaemon
import ErrorBusTesting
import Foundation
import Logging
import TestSupport
import Testing

/// `aws-sigv4` as the bus's authenticator: asking again cannot change a static key, but temporary
/// credentials whose files a helper rewrote are read again.
@Suite(.timeLimit(.minutes(1)))
struct AWSSigV4AuthTests {
    static let logger = Logger(label: "sigv4-auth-tests") { _ in SwiftLogNoOpLogHandler() }

    static func settings(secretFile: String?, tokenFile: String?, token: String?) -> AuthService.Settings {
        AuthService.Settings(
            method: .awsSigV4,
            tokenURL: "",
            host: "s3.example.net",
            realm: "api",
            clientID: "",
            secret: "secret",
            signing: AWSSignatureV4(credentials: .init(accessKeyID: "AKIAEXAMPLE", secretAccessKey: "secret", sessionToken: token), region: "us-east-1"),
            secretAccessKeyFile: secretFile,
            sessionTokenFile: tokenFile,
            secretFix: "Fix the secret access key in /etc/errorbusd/secret-access-key, then reload errorbusd",
            refreshMargin: .seconds(60),
            requestTimeout: .seconds(5)
        )
    }

    @Test func anExpiredSessionIsRenewedFromItsFilesOnceTheyChange() async throws {
        let scratch = try ScratchDirectory("sigv4-session")
        let (secretFile, tokenFile) = (scratch.file("secret-access-key"), scratch.file("session-token"))
        try "secret\n".write(toFile: secretFile, atomically: true, encoding: .utf8)
        try "token-1\n".write(toFile: tokenFile, atomically: true, encoding: .utf8)
        let auth = AuthService(
            settings: Self.settings(secretFile: secretFile, tokenFile: tokenFile, token: "token-1"),
            http: RoutedHTTPClient(.shared), bus: ErrorBus(clock: ManualClock(), logger: Self.logger), logger: Self.logger
        )
        // Nothing new in the files: an operator's task, naming what to fix.
        guard case .rejected(let text) = await auth.reauthenticate(realm: "api") else {
            Issue.record("the same credentials were taken for new ones")
            return
        }
        #expect(text.message.contains("access key AKIAEXAMPLE"), "\(text)")
        #expect(text.next?.contains("auth.access-key-id") == true && text.next?.contains("/etc/errorbusd/secret-access-key") == true, "\(text)")

        // The helper wrote new temporary credentials: signed with them from now on.
        try "secret-2\n".write(toFile: secretFile, atomically: true, encoding: .utf8)
        try "token-2\n".write(toFile: tokenFile, atomically: true, encoding: .utf8)
        guard case .renewed = await auth.reauthenticate(realm: "api") else {
            Issue.record("new credentials in the files were not read")
            return
        }
        let renewed = await auth.currentSignIn.signer?.credentials
        #expect(renewed == .init(accessKeyID: "AKIAEXAMPLE", secretAccessKey: "secret-2", sessionToken: "token-2"))
        #expect(try await auth.signIn().authorization == nil, "aws-sigv4 signs each request; it sends no Authorization of its own")
    }

    @Test func aKeyFromACredentialIsNotReadAgain() async throws {
        let auth = AuthService(
            settings: Self.settings(secretFile: nil, tokenFile: nil, token: nil),
            http: RoutedHTTPClient(.shared), bus: ErrorBus(clock: ManualClock(), logger: Self.logger), logger: Self.logger
        )
        guard case .rejected = await auth.reauthenticate(realm: "api") else {
            Issue.record("a credential systemd copied at start cannot change")
            return
        }
    }
}
