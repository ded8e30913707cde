import AsyncHTTPClient
import ErrorBus
import ErrorBusDaemon
import ErrorBusHTTP
import NIOCore
import NIOHTTP1
import NIOSSL
import Testing

/// TLS failures against a real TLS server with a self-signed certificate.
///
/// The decision these tests pin down: a certificate this host does not trust is `unreachable`
/// (usually a captive portal or an intercepting proxy: wait for the probe), while TLS files this
/// host cannot load are `fatal` (a local misconfiguration: pause the service).
@Suite(.timeLimit(.minutes(1)))
struct HTTPFailureTLSTests {
    static func client(_ tls: TLSConfiguration) -> HTTPClient {
        var configuration = HTTPClient.Configuration.errorbusAPI(connectTimeout: .seconds(1), readTimeout: .seconds(5))
        configuration.tlsConfiguration = tls
        return HTTPClient(eventLoopGroupProvider: .singleton, configuration: configuration)
    }

    static func failure(url: String, tls: TLSConfiguration) async throws -> HTTPFailure? {
        let client = client(tls)
        let failure = await LiveSandbox.failure(of: .GET, url: url, client: client, expecting: [204], timeout: .seconds(5))
        try await client.shutdown()
        return failure
    }

    @Test func aSelfSignedCertificateIsUnreachableAndBlamesAPortalOrProxy() async throws {
        try await SelfSignedTLSServer.with(subjectAltName: "IP:127.0.0.1") { server in
            let failure = try #require(
                try await Self.failure(url: "https://127.0.0.1:\(server.port)/healthz", tls: .makeClientConfiguration())
            )
            #expect(failure.category == .unreachable)
            #expect(failure.cause == "untrustedCertificate")
            #expect(failure.scope == "https://127.0.0.1:\(server.port)")
            #expect(failure.operatorText.title == "API certificate not trusted")
            #expect(failure.operatorText.message.contains("captive portal or an intercepting proxy"))
            #expect(failure.operatorText.next?.contains("sign in or fix the proxy") == true)
            #expect(failure.underlying is NIOSSLError)
        }
    }

    @Test func aTrustedCertificateForAnotherNameIsUntrusted() async throws {
        try await SelfSignedTLSServer.with(subjectAltName: "DNS:api.example.net") { server in
            var tls = TLSConfiguration.makeClientConfiguration()
            tls.trustRoots = .file(server.certificatePath)
            let failure = try #require(try await Self.failure(url: "https://127.0.0.1:\(server.port)/healthz", tls: tls))
            #expect(failure.category == .unreachable)
            #expect(failure.cause == "untrustedCertificate")
            #expect(failure.underlying as? NIOSSLExtraError == .failedToValidateHostname)
        }
    }

    @Test func aCAFileThatCannotBeLoadedIsFatal() async throws {
        try await SelfSignedTLSServer.with(subjectAltName: "IP:127.0.0.1") { server in
            var tls = TLSConfiguration.makeClientConfiguration()
            tls.trustRoots = .file("/nonexistent/errorbus-ca.pem")
            let failure = try #require(try await Self.failure(url: "https://127.0.0.1:\(server.port)/healthz", tls: tls))
            #expect(failure.category == .fatal)
            #expect(failure.cause == "tlsConfiguration")
            #expect(failure.scope == nil, "a fatal failure pauses the job's service, whatever the host")
            #expect(failure.operatorText.next?.contains("fix the CA file") == true)
        }
    }
}
