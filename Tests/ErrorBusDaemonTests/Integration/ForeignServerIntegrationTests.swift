import Crypto
import ErrorBusControl
import Foundation
import Glibc
import TestSupport
import Testing
import Varlink

/// errorbusd against servers that were not written for it: nginx as a WebDAV target with basic
/// auth, nginx demanding a TLS client certificate, nginx serving static files, and an upload API
/// taking multipart forms (Python's standard library parsing them). Each server runs on loopback,
/// started by the test; every wait is for a line a process logs or a file leaving the outbox.
@Suite(
    "Integration: errorbusd against servers it was not written for",
    .serialized,
    .timeLimit(.minutes(3)),
    .enabled(if: NginxProcess.executable != nil, "nginx is not installed (scripts/test installs nginx-light)")
)
struct ForeignServerIntegrationTests {
    /// A WebDAV location: PUT creates the file (and its directories) under `html`.
    static let webDAV = """
        server {
            listen 127.0.0.1:{port};
            location = /healthz { return 204; }
            location /dav/ {
                root {root}/html;
                dav_methods PUT;
                create_full_put_path on;
                auth_basic "errorbus";
                auth_basic_user_file {root}/htpasswd;
            }
        }
        """

    /// A WebDAV location over HTTPS with the test CA's server certificate; `verifyingClients`:
    /// only a client certificate from that CA gets in.
    static func httpsWebDAV(_ certificates: TestCertificates, verifyingClients: Bool) -> String {
        let clients = verifyingClients ? "ssl_client_certificate \(certificates.caCertificate);\n        ssl_verify_client on;" : ""
        return """
            server {
                listen 127.0.0.1:{port} ssl;
                ssl_certificate \(certificates.serverCertificate);
                ssl_certificate_key \(certificates.serverKey);
                \(clients)
                location = /healthz { return 204; }
                location /dav/ {
                    root {root}/html;
                    dav_methods PUT;
                    create_full_put_path on;
                }
            }
            """
    }

    /// The upload contract of a WebDAV server: PUT to the file's name, 201 or 204, no receipt.
    static func webDAVContract(_ nginx: NginxProcess) -> String {
        """
          probe-url: \(nginx.baseURL)/healthz
          upload:
            url: /dav/incoming/{name}
            idempotency-header:
            delivered: [201, 204]
            receipt:
              json-pointer:
        """
    }

    static let basicAuth = """
          method: basic
          user: errorbus
        """

    /// Files with names a URL must encode, one larger than a chunk (streamed from disk).
    static let files: [(name: String, content: Data)] = [
        ("report 1.txt", Data("first report\n".utf8)),
        // The same content under another name: to an API that tells files by name, another file.
        ("copy of report 1.txt", Data("first report\n".utf8)),
        ("ünïcode+50%.csv", Data("a,b\n1,2\n".utf8)),
        ("large.bin", Data((0..<300_000).map { UInt8(truncatingIfNeeded: $0 &* 31) })),
    ]

    static func incidents(_ daemon: DaemonProcess) async throws -> [Control.Incident] {
        try await ControlIntegrationTests.varlink(daemon) { try await $0.call(Control.listIncidents, .init(all: true)) }.incidents
    }

    /// Stops `daemon` (expecting a clean exit) and the servers, whatever `body` did.
    static func run(_ daemon: DaemonProcess, stopping servers: [NginxProcess], _ body: () async throws -> Void) async throws {
        do {
            try await daemon.start()
            try await body()
            let finished = try await daemon.stop()
            #expect(finished.status == 0, "errorbusd exited with \(finished.status):\n\(finished.standardError)")
        } catch {
            _ = try? await daemon.kill()
            for server in servers { await server.stop() }
            throw error
        }
        for server in servers { await server.stop() }
    }

    @Test func webDAVGetsEachFileUnderItsNameAndAStoppedServerIsAnOutage() async throws {
        let scratch = try ScratchDirectory("webdav")
        let nginx = try NginxProcess(in: scratch, servers: Self.webDAV)
        try await NginxProcess.htpasswd(user: "errorbus", password: "right horse").write(toFile: nginx.directory + "/htpasswd", atomically: true, encoding: .utf8)
        try await nginx.start()
        let daemon = try DaemonProcess(
            in: scratch, baseURL: nginx.baseURL, api: Self.webDAVContract(nginx), auth: Self.basicAuth, credentials: ["password": "right horse\n"]
        )
        try await Self.run(daemon, stopping: [nginx]) {
            for file in Self.files { try daemon.drop(file.name, content: file.content) }
            try await DirectoryWatcher.wait(for: daemon.outbox) { $0.isEmpty }
            for file in Self.files {
                let stored = FileManager.default.contents(atPath: nginx.directory + "/html/dav/incoming/" + file.name)
                #expect(stored == file.content, "\(file.name) did not arrive as it was")
            }
            #expect(nginx.log.contains("PUT /dav/incoming/report 1.txt 201"))
            #expect(nginx.log.contains("user=\"errorbus\""))

            // nginx stopped: connections refused, an outage that waits for the probe.
            await nginx.stop()
            try daemon.drop("during the outage.txt", content: Data("held\n".utf8))
            try await daemon.waitForLog("incident 1 opened: ")
            let outage = try #require(try await Self.incidents(daemon).first)
            #expect(outage.category == .unreachable, "\(outage)")
            #expect(try daemon.outboxFiles() == ["during the outage.txt"])

            try await nginx.start()
            try await daemon.waitForLog("incident 1 recovered")
            try await DirectoryWatcher.wait(for: daemon.outbox) { $0.isEmpty }
            #expect(FileManager.default.contents(atPath: nginx.directory + "/html/dav/incoming/during the outage.txt") == Data("held\n".utf8))
        }
    }

    @Test func aWrongPasswordIsOneIncidentForAnOperatorAndTheRightOneLetsTheWorkGo() async throws {
        let scratch = try ScratchDirectory("webdav-password")
        let nginx = try NginxProcess(in: scratch, servers: Self.webDAV)
        try await NginxProcess.htpasswd(user: "errorbus", password: "right horse").write(toFile: nginx.directory + "/htpasswd", atomically: true, encoding: .utf8)
        try await nginx.start()
        let passwordFile = scratch.file("password")
        try "wrong horse\n".write(toFile: passwordFile, atomically: true, encoding: .utf8)
        let daemon = try DaemonProcess(
            in: scratch, baseURL: nginx.baseURL, api: Self.webDAVContract(nginx),
            auth: Self.basicAuth + "\n  password-file: \(passwordFile)", credentials: [:]
        )
        try await Self.run(daemon, stopping: [nginx]) {
            for number in 0..<6 { try daemon.drop("file-\(number).txt", content: Data("file \(number)\n".utf8)) }
            try await daemon.waitForLog("needs an operator")
            try await daemon.waitForParked(6, under: 1)
            let incidents = try await Self.incidents(daemon)
            #expect(incidents.count == 1, "\(incidents)")
            let incident = try #require(incidents.first)
            #expect(incident.category == .unauthenticated)
            #expect(incident.state == "needsOperator")
            #expect(incident.title == "Credentials rejected", "\(incident)")
            #expect(incident.next?.contains(passwordFile) == true, "\(incident)")
            #expect(try daemon.outboxFiles().count == 6)

            // The operator fixes the password and reloads: the held work goes.
            try "right horse\n".write(toFile: passwordFile, atomically: true, encoding: .utf8)
            try daemon.signal(SIGHUP)
            try await daemon.waitForLog("configuration reloaded")
            try await DirectoryWatcher.wait(for: daemon.outbox) { $0.isEmpty }
            let stored = try FileManager.default.contentsOfDirectory(atPath: nginx.directory + "/html/dav/incoming")
            #expect(stored.count == 6)
        }
    }

    @Test func aClientCertificateFromTheAPIsCAIsAcceptedAndNoneOrAStrangersIsAnOperatorIncident() async throws {
        let scratch = try ScratchDirectory("mtls")
        let certificates = try await TestCertificates.make(in: scratch)
        let nginx = try NginxProcess(in: scratch, servers: Self.httpsWebDAV(certificates, verifyingClients: true))
        try await nginx.start()
        let baseURL = "https://127.0.0.1:\(nginx.port)"
        let api = """
              ca-file: \(certificates.caCertificate)
              probe-url: \(baseURL)/healthz
              upload:
                url: /dav/{sha256}
                delivered: [201, 204]
                receipt:
                  json-pointer:
            """
        /// A daemon of its own directories signing in by `auth`, running `body`.
        func withDaemon(_ label: String, auth: String, _ body: (DaemonProcess) async throws -> Void) async throws {
            let directory = try ScratchDirectory(label)
            let daemon = try DaemonProcess(in: directory, baseURL: baseURL, api: api, auth: auth, credentials: [:])
            try await Self.run(daemon, stopping: []) { try await body(daemon) }
        }
        let content = Data("signed by certificate\n".utf8)
        let digest = SHA256.hash(data: content).map { String(format: "%02x", $0) }.joined()

        try await withDaemon(
            "mtls-trusted",
            auth: "  method: mtls\n  client-certificate-file: \(certificates.clientCertificate)\n  client-key-file: \(certificates.clientKey)"
        ) { trusted in
            try trusted.drop("signed.txt", content: content)
            try await DirectoryWatcher.wait(for: trusted.outbox) { $0.isEmpty }
            #expect(FileManager.default.contents(atPath: nginx.directory + "/html/dav/" + digest) == content)
        }

        let refusals = [
            ("mtls-stranger", "  method: mtls\n  client-certificate-file: \(certificates.strangerCertificate)\n  client-key-file: \(certificates.strangerKey)", "Client certificate refused"),
            ("mtls-none", "  method: none", "Sign-in required"),
        ]
        for (label, auth, title) in refusals {
            try await withDaemon(label, auth: auth) { refused in
                try refused.drop("refused.txt", content: Data("\(label)\n".utf8))
                try await refused.waitForLog("needs an operator")
                let incidents = try await Self.incidents(refused)
                #expect(incidents.count == 1, "\(label): \(incidents)")
                #expect(incidents.first?.category == .unauthenticated, "\(label)")
                #expect(incidents.first?.cause == "clientCertificateRefused", "\(label): \(incidents)")
                #expect(incidents.first?.state == "needsOperator", "\(label)")
                #expect(refused.log.contains(title), "\(label): \(refused.log)")
                #expect(try refused.outboxFiles() == ["refused.txt"])
            }
        }
        await nginx.stop()
    }

    /// Also: only a resource on the API's own origin is sent the sign-in. `localhost` is another
    /// origin than `127.0.0.1`, though the same nginx answers both.
    /// A server that refuses at the TLS level (`openssl s_server -Verify 1`, TLS 1.3): its alert
    /// arrives after the client's handshake, as a read error, and still means a certificate.
    @Test func aTLSAlertAboutTheClientCertificateIsAnOperatorIncident() async throws {
        let scratch = try ScratchDirectory("tls-alert")
        let certificates = try await TestCertificates.make(in: scratch)
        let port = try NginxProcess.freePort()
        let server = try ChildProcess(
            "/usr/bin/openssl",
            [
                "s_server", "-accept", "127.0.0.1:\(port)", "-cert", certificates.serverCertificate, "-key", certificates.serverKey,
                "-CAfile", certificates.caCertificate, "-Verify", "1", "-tls1_3", "-www",
            ]
        )
        defer { server.terminate() }
        guard await server.waitForStandardOutput(containing: "ACCEPT") else {
            throw ChildProcessError(description: "openssl s_server did not start: \(server.standardError.text)")
        }
        let daemon = try DaemonProcess(
            in: scratch, baseURL: "https://127.0.0.1:\(port)", api: "  ca-file: \(certificates.caCertificate)", auth: "  method: none", credentials: [:]
        )
        try await Self.run(daemon, stopping: []) {
            try daemon.drop("refused.txt", content: Data("no certificate\n".utf8))
            try await daemon.waitForLog("needs an operator")
            let incident = try #require(try await Self.incidents(daemon).first)
            #expect(incident.category == .unauthenticated, "\(incident)")
            #expect(incident.cause == "clientCertificateRefused", "\(incident)")
            #expect(daemon.log.contains("refused the TLS client certificate (ALERT_CERTIFICATE_REQUIRED)"), "\(daemon.log)")
        }
    }

    @Test func staticResourcesAreFetchedOnceThenAnsweredNotModifiedByEitherValidator() async throws {
        let scratch = try ScratchDirectory("static")
        let nginx = try NginxProcess(
            in: scratch,
            servers: """
                server {
                    listen 127.0.0.1:{port};
                    location /tagged/ { root {root}/html; }
                    location /dated/ { root {root}/html; etag off; }
                }
                """
        )
        for (directory, name, text) in [("tagged", "motd.txt", "hello\n"), ("dated", "plan.json", "{\"plan\":1}\n")] {
            try FileManager.default.createDirectory(atPath: nginx.directory + "/html/" + directory, withIntermediateDirectories: true)
            try text.write(toFile: nginx.directory + "/html/\(directory)/\(name)", atomically: true, encoding: .utf8)
        }
        try await nginx.start()
        let daemon = try DaemonProcess(
            in: scratch, baseURL: nginx.baseURL, auth: "  method: bearer", credentials: ["token": "t0ken\n"],
            resources: ["\(nginx.baseURL)/tagged/motd.txt=1s", "http://localhost:\(nginx.port)/dated/plan.json=1s"]
        )
        try await Self.run(daemon, stopping: [nginx]) {
            // nginx logs an absent header as "-". ETag (and Last-Modified) from the tagged
            // location: If-None-Match answers 304.
            try await nginx.waitForAccess("GET /tagged/motd.txt 200 inm=\"-\" ims=\"-\"")
            try await nginx.waitForAccess("GET /tagged/motd.txt 304 inm=\"\\x22")
            // Only Last-Modified from the dated one: If-Modified-Since alone answers 304.
            try await nginx.waitForAccess("GET /dated/plan.json 200 inm=\"-\" ims=\"-\"")
            try await nginx.waitForAccess("GET /dated/plan.json 304 inm=\"-\" ims=\"")
            let lines = nginx.log.split(separator: "\n")
            #expect(lines.filter { $0.contains("/tagged/") }.allSatisfy { $0.hasSuffix("auth=\"Bearer t0ken\"") }, "\(nginx.log)")
            #expect(lines.filter { $0.contains("/dated/") }.allSatisfy { $0.hasSuffix("auth=\"-\"") }, "\(nginx.log)")
            #expect(FileManager.default.contents(atPath: daemon.resources + "/motd.txt") == Data("hello\n".utf8))
            #expect(FileManager.default.contents(atPath: daemon.resources + "/plan.json") == Data("{\"plan\":1}\n".utf8))
        }
    }

    /// Starts `upload_server.py` (with `lie`, answering with a wrong digest) and returns it and
    /// its base URL.
    static func uploadServer(storingIn stored: String, lying: Bool = false) async throws -> (ChildProcess, String) {
        let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("Support/upload_server.py").path
        let python = try #require(ChildProcess.find("python3"))
        let server = try ChildProcess(python, ["-u", script, stored, "t0ken", "k3y"] + (lying ? ["lie"] : []))
        guard await server.waitForStandardError(containing: "listening on ") else {
            throw ChildProcessError(description: "the upload server did not start: \(server.standardError.text)")
        }
        let port = try #require(server.standardError.text.split(separator: " ").last.flatMap { Int($0.trimmingCharacters(in: .whitespacesAndNewlines)) })
        return (server, "http://127.0.0.1:\(port)")
    }

    static let multipartContract = """
          upload:
            method: POST
            url: /upload?name={name}
            body: multipart
            multipart-field: file
            headers:
              - "X-Tenant: acme"
              - "X-Api-Key: {credential:api-key}"
            receipt:
              header: Repr-Digest
              value: "sha-256=:{sha256-base64}:"
        """

    @Test func aMultipartAPIWithABearerTokenAHeaderFromACredentialAndADigestReceipt() async throws {
        let scratch = try ScratchDirectory("multipart")
        let stored = scratch.file("stored")
        try FileManager.default.createDirectory(atPath: stored, withIntermediateDirectories: true)
        let (server, baseURL) = try await Self.uploadServer(storingIn: stored)
        defer { server.terminate() }
        let daemon = try DaemonProcess(
            in: scratch, baseURL: baseURL, api: Self.multipartContract, auth: "  method: bearer",
            credentials: ["token": "t0ken\n", "api-key": "k3y\n"]
        )
        try await Self.run(daemon, stopping: []) {
            for file in Self.files { try daemon.drop(file.name, content: file.content) }
            try await DirectoryWatcher.wait(for: daemon.outbox) { $0.isEmpty }
            for file in Self.files {
                #expect(FileManager.default.contents(atPath: stored + "/" + file.name) == file.content, "\(file.name)")
            }
            #expect(server.standardError.text.contains("stored report 1.txt tenant=acme"))
            #expect(try await Self.incidents(daemon).isEmpty)
        }
    }

    @Test func aDeliveredStatusWithoutTheReceiptIsNoDelivery() async throws {
        let scratch = try ScratchDirectory("multipart-lie")
        let (server, baseURL) = try await Self.uploadServer(storingIn: scratch.path, lying: true)
        defer { server.terminate() }
        let daemon = try DaemonProcess(
            in: scratch, baseURL: baseURL, api: Self.multipartContract, auth: "  method: bearer",
            credentials: ["token": "t0ken\n", "api-key": "k3y\n"]
        )
        try await Self.run(daemon, stopping: []) {
            try daemon.drop("kept.txt", content: Data("not received\n".utf8))
            try await daemon.waitForLog("kept.txt set aside as a dead letter: ")
            // Set aside, not deleted: an operator can retry it once the API answers as it should.
            #expect(try daemon.outboxFiles() == ["kept.txt"])
            #expect(daemon.log.contains("Receipt missing"), "\(daemon.log)")
        }
    }
}
