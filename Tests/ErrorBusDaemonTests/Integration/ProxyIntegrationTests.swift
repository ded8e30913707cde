import ErrorBusControl
import Foundation
import Glibc
import TestSupport
import Testing

/// errorbusd behind a real squid, as on a corporate network whose only way out is a proxy with a
/// sign-in: uploads and tokens go through it, its outage is one incident on the proxy, a wrong
/// password waits for an operator, `no-proxy` hosts go direct, and HTTPS goes through `CONNECT`.
@Suite(
    "Integration: errorbusd behind squid",
    .serialized,
    .timeLimit(.minutes(3)),
    .enabled(if: SquidProcess.executable != nil, "squid is not installed (scripts/test installs it)")
)
struct ProxyIntegrationTests {
    static let user = "errorbus"
    static let password = "proxy s3cret"

    /// A daemon for `sandbox` whose requests go through `proxy`, signing in with `password`
    /// (the credential proxy-password).
    static func daemon(
        _ scratch: borrowing ScratchDirectory,
        _ sandbox: SandboxProcess,
        proxy: String?,
        password: String? = Self.password,
        api: String = "",
        environment: [String: String] = [:]
    ) throws -> DaemonProcess {
        var lines = api
        if let proxy { lines += "\n  proxy: \(proxy)\n  proxy-user: \(user)" }
        var credentials = ["client-secret": sandbox.clientSecret]
        credentials["proxy-password"] = password.map { $0 + "\n" }
        return try DaemonProcess(in: scratch, baseURL: sandbox.baseURL, api: lines, credentials: credentials, environment: environment)
    }

    /// The sandbox's `HOST:PORT`, as squid logs a tunnel to it.
    static func authority(_ sandbox: SandboxProcess) -> String {
        String(sandbox.baseURL.dropFirst("http://".count))
    }

    static func files(_ count: Int, _ daemon: DaemonProcess) throws {
        for number in 0..<count { try daemon.drop("file-\(number).txt", content: Data("file \(number) behind the proxy\n".utf8)) }
    }

    /// Runs `body` with squid, the sandbox and errorbusd, and stops all three whatever it did.
    static func run(_ squid: SquidProcess, _ sandbox: SandboxProcess, _ daemon: DaemonProcess, _ body: () async throws -> Void) async throws {
        do {
            try await daemon.start()
            try await body()
            let finished = try await daemon.stop()
            #expect(finished.status == 0, "errorbusd exited with \(finished.status):\n\(finished.standardError)")
        } catch {
            _ = try? await daemon.kill()
            await squid.stop()
            try? await sandbox.stop()
            throw error
        }
        await squid.stop()
        try await sandbox.stop()
    }

    @Test func uploadsAndTokensGoThroughTheProxyWithItsSignIn() async throws {
        let scratch = try ScratchDirectory("proxy")
        let squid = try await SquidProcess(in: scratch, users: [Self.user: Self.password])
        try await squid.start()
        let sandbox = try await SandboxProcess(in: scratch)
        let daemon = try Self.daemon(scratch, sandbox, proxy: squid.url)
        try await Self.run(squid, sandbox, daemon) {
            try Self.files(3, daemon)
            try await DirectoryWatcher.wait(for: daemon.outbox) { $0.isEmpty }
            #expect(try await sandbox.items().count == 3)
            // squid logs a tunnel when it closes: at errorbusd's stop.
            _ = try await daemon.stop()
            try await squid.waitForAccess("TCP_TUNNEL/200", "CONNECT \(Self.authority(sandbox)) \(Self.user)")
            #expect(!squid.accessLog.contains("TCP_DENIED"), "\(squid.accessLog)")
            try await daemon.start()
        }
    }

    @Test func aStoppedProxyIsOneOutageOfTheProxyAndItsReturnDeliversEverything() async throws {
        let scratch = try ScratchDirectory("proxy-down")
        let squid = try await SquidProcess(in: scratch, users: [Self.user: Self.password])
        try await squid.start()
        let sandbox = try await SandboxProcess(in: scratch)
        let daemon = try Self.daemon(scratch, sandbox, proxy: squid.url)
        try await Self.run(squid, sandbox, daemon) {
            await squid.stop()
            try Self.files(4, daemon)
            try await daemon.waitForParked(4, under: 1)
            let incidents = try await ForeignServerIntegrationTests.incidents(daemon)
            #expect(incidents.count == 1, "\(incidents)")
            let incident = try #require(incidents.first)
            #expect(incident.category == .unreachable, "\(incident)")
            #expect(incident.cause == "proxyUnreachable", "\(incident)")
            #expect(incident.scope == squid.url, "\(incident)")
            #expect(incident.message.contains("through the proxy \(squid.url), which cannot be reached"), "\(incident)")
            #expect(try await sandbox.items().isEmpty)

            try await squid.start()
            try await daemon.waitForLog("incident 1 recovered")
            try await DirectoryWatcher.wait(for: daemon.outbox) { $0.isEmpty }
            #expect(try await sandbox.items().count == 4)
        }
    }

    @Test func aWrongProxyPasswordIsOneIncidentForAnOperatorNamingTheCredential() async throws {
        let scratch = try ScratchDirectory("proxy-password")
        let squid = try await SquidProcess(in: scratch, users: [Self.user: Self.password])
        try await squid.start()
        let sandbox = try await SandboxProcess(in: scratch)
        let daemon = try Self.daemon(scratch, sandbox, proxy: squid.url, password: "not the password")
        try await Self.run(squid, sandbox, daemon) {
            try Self.files(5, daemon)
            try await daemon.waitForLog("needs an operator")
            try await daemon.waitForParked(5, under: 1)
            let incidents = try await ForeignServerIntegrationTests.incidents(daemon)
            #expect(incidents.count == 1, "\(incidents)")
            let incident = try #require(incidents.first)
            #expect(incident.category == .unauthenticated, "\(incident)")
            #expect(incident.state == "needsOperator", "\(incident)")
            #expect(incident.cause == "proxyAuthenticationRequired", "\(incident)")
            #expect(incident.message.contains("refused the sign-in of \(Self.user)"), "\(incident)")
            #expect(incident.next?.contains("the credential proxy-password") == true, "\(incident)")
            #expect(try await sandbox.items().isEmpty)
            #expect(squid.accessLog.contains("TCP_DENIED/407"), "\(squid.accessLog)")
        }
    }

    /// A proxy whose rules refuse the API's port: said to be the proxy's refusal, with its status.
    @Test func aHostTheProxyRefusesIsSaidToBeRefusedByTheProxy() async throws {
        let scratch = try ScratchDirectory("proxy-refuses")
        let sandbox = try await SandboxProcess(in: scratch)
        let refused = try #require(Int(Self.authority(sandbox).split(separator: ":").last ?? ""))
        let squid = try await SquidProcess(in: scratch, users: [Self.user: Self.password], refusedPorts: [refused])
        try await squid.start()
        let daemon = try Self.daemon(scratch, sandbox, proxy: squid.url)
        try await Self.run(squid, sandbox, daemon) {
            try Self.files(2, daemon)
            try await daemon.waitForParked(2, under: 1)
            let incidents = try await ForeignServerIntegrationTests.incidents(daemon)
            #expect(incidents.count == 1, "\(incidents)")
            let incident = try #require(incidents.first)
            #expect(incident.cause == "proxyRefused", "\(incident)")
            #expect(incident.message.contains("refuses to connect to \(Self.authority(sandbox)) (403 Forbidden)"), "\(incident)")
            #expect(incident.next?.contains("api.no-proxy") == true, "\(incident)")
        }
    }

    /// The proxy is there but the API is not: squid answers the CONNECT with 503, which is told
    /// as the API's outage seen from the proxy, with the proxy's status, at the API's origin.
    @Test func anAPIDownBehindAWorkingProxyIsToldWithTheProxysStatus() async throws {
        let scratch = try ScratchDirectory("proxy-api-down")
        let squid = try await SquidProcess(in: scratch, users: [Self.user: Self.password])
        try await squid.start()
        let sandbox = try await SandboxProcess(in: scratch)
        let daemon = try Self.daemon(scratch, sandbox, proxy: squid.url)
        do {
            try await daemon.start()
            try await sandbox.stop()
            try Self.files(2, daemon)
            try await daemon.waitForParked(2, under: 1)
            let incidents = try await ForeignServerIntegrationTests.incidents(daemon)
            #expect(incidents.count == 1, "\(incidents)")
            let incident = try #require(incidents.first)
            #expect(incident.category == .unreachable, "\(incident)")
            #expect(incident.cause == "proxyBadGateway", "\(incident)")
            #expect(incident.scope == sandbox.baseURL, "\(incident)")
            #expect(incident.message.contains("could not connect to \(Self.authority(sandbox))") && incident.message.contains("(503 Service Unavailable)"), "\(incident)")
            #expect(try await daemon.stop().status == 0)
        } catch {
            _ = try? await daemon.kill()
            await squid.stop()
            throw error
        }
        await squid.stop()
    }

    /// Unset, the key leaves the proxy to the environment, as curl reads it; `no_proxy` (and
    /// `api.no-proxy`) send a host direct, past a proxy that is not even there.
    @Test func theEnvironmentsProxyIsTakenAndNoProxyHostsGoDirect() async throws {
        let scratch = try ScratchDirectory("proxy-environment")
        let squid = try await SquidProcess(in: scratch, users: [Self.user: Self.password])
        try await squid.start()
        let sandbox = try await SandboxProcess(in: scratch)
        let escaped = Self.password.replacingOccurrences(of: " ", with: "%20")
        let proxyURL = "http://\(Self.user):\(escaped)@127.0.0.1:\(squid.port)"
        let daemon = try Self.daemon(scratch, sandbox, proxy: nil, environment: ["http_proxy": proxyURL, "no_proxy": "localhost,.example.net"])
        try await Self.run(squid, sandbox, daemon) {
            try Self.files(2, daemon)
            try await DirectoryWatcher.wait(for: daemon.outbox) { $0.isEmpty }
            _ = try await daemon.stop()
            try await squid.waitForAccess("TCP_TUNNEL/200", "CONNECT \(Self.authority(sandbox)) \(Self.user)")
        }

        let nowhere = try NginxProcess.freePort()
        for (label, environment, api) in [
            ("no_proxy", ["http_proxy": "http://127.0.0.1:\(nowhere)", "no_proxy": "example.net, 127.0.0.0/8"], ""),
            ("api.no-proxy", [:], "\n  proxy: http://127.0.0.1:\(nowhere)\n  no-proxy: [localhost, 127.0.0.1]"),
        ] {
            let directory = try ScratchDirectory("proxy-bypass")
            let sandbox = try await SandboxProcess(in: directory)
            let direct = try DaemonProcess(
                in: directory, baseURL: sandbox.baseURL, api: api, credentials: ["client-secret": sandbox.clientSecret], environment: environment
            )
            try await direct.start()
            try Self.files(2, direct)
            try await DirectoryWatcher.wait(for: direct.outbox) { $0.isEmpty }
            #expect(try await sandbox.items().count == 2, "\(label)")
            #expect(try await direct.stop().status == 0)
            try await sandbox.stop()
        }
    }

    @Test func httpsGoesThroughTheProxyByConnect() async throws {
        guard NginxProcess.executable != nil else { return }
        let scratch = try ScratchDirectory("proxy-https")
        let certificates = try await TestCertificates.make(in: scratch)
        let nginx = try NginxProcess(in: scratch, servers: ForeignServerIntegrationTests.httpsWebDAV(certificates, verifyingClients: false))
        try await nginx.start()
        let squid = try await SquidProcess(in: scratch, users: [Self.user: Self.password])
        try await squid.start()
        let baseURL = "https://127.0.0.1:\(nginx.port)"
        let daemon = try DaemonProcess(
            in: scratch,
            baseURL: baseURL,
            api: """
                  ca-file: \(certificates.caCertificate)
                  proxy: \(squid.url)
                  proxy-user: \(Self.user)
                  upload:
                    url: /dav/{name}
                    delivered: [201, 204]
                    receipt:
                      json-pointer:
                """,
            auth: "  method: none",
            credentials: ["proxy-password": Self.password]
        )
        do {
            try await daemon.start()
            try Self.files(3, daemon)
            try await DirectoryWatcher.wait(for: daemon.outbox) { $0.isEmpty }
            let stored = try FileManager.default.contentsOfDirectory(atPath: nginx.directory + "/html/dav")
            #expect(stored.count == 3, "\(stored)")
            #expect(try await daemon.stop().status == 0)
            try await squid.waitForAccess("TCP_TUNNEL/200", "CONNECT 127.0.0.1:\(nginx.port) \(Self.user)")
        } catch {
            _ = try? await daemon.kill()
            await squid.stop()
            await nginx.stop()
            throw error
        }
        await squid.stop()
        await nginx.stop()
    }
}
