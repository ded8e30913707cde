import Foundation
import Testing

@testable import ErrorBusDaemon

/// `etc/errorbusd/errorbusd.yaml`, the documented example installed as
/// `/etc/errorbusd/errorbusd.yaml`, loads as it is and says what the code does.
@Suite struct ConfigurationExampleTests {
    /// The example file in this repository.
    static let examplePath = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent()  // Configuration
        .deletingLastPathComponent()  // ErrorBusDaemonTests
        .deletingLastPathComponent()  // Tests
        .deletingLastPathComponent()  // the package
        .appendingPathComponent("etc/errorbusd/errorbusd.yaml").path

    /// The example and `docs/configuration.md` are what the tables write: a key added, changed or
    /// removed in a table and not regenerated fails here.
    @Test(arguments: [
        (ConfigurationReference.Format.yaml, "etc/errorbusd/errorbusd.yaml"),
        (.markdown, "docs/configuration.md"),
    ])
    func isWhatTheTablesWrite(format: ConfigurationReference.Format, path: String) throws {
        let package = URL(fileURLWithPath: Self.examplePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        let checkedIn = try String(contentsOfFile: package.appendingPathComponent(path).path, encoding: .utf8)
        #expect(checkedIn == ConfigurationReference.text(format), "regenerate \(path) with errorbusd --config-reference \(format.rawValue)")
    }

    /// Every key of the reference has its environment variable, its type and its default.
    @Test func theManPageDescribesEveryKey() {
        let page = ConfigurationReference.text(.man, date: "November 25, 2026")
        for key in ConfigurationKeys.table {
            #expect(page.contains(".It Cm \(key.key)\n"), "\(key.key)")
            #expect(page.contains(".Ev \(key.environmentVariable) ."), "\(key.key)")
        }
    }

    @Test func loadsAsTheDefaults() async throws {
        try await ConfigurationFixture.with { fixture in
            let configuration = try DaemonConfiguration.load(file: Self.examplePath, environment: try fixture.credentials())
            #expect(configuration == fixture.defaults)
            // What the demo against the local sandbox needs.
            #expect(configuration.api.baseURL == "http://127.0.0.1:8080")
            #expect(configuration.auth.secretFiles.isEmpty)
        }
    }

    /// `etc/errorbusd/errorbusd.minimal.yaml`, the package's template for
    /// `/etc/errorbusd/errorbusd.yaml`: only what an administrator sets, each at its default.
    @Test func theTemplateLoadsAsTheDefaults() async throws {
        let template = URL(fileURLWithPath: Self.examplePath).deletingLastPathComponent().appendingPathComponent("errorbusd.minimal.yaml").path
        try await ConfigurationFixture.with { fixture in
            let configuration = try DaemonConfiguration.load(file: template, environment: try fixture.credentials())
            #expect(configuration == fixture.defaults)
            let outline = try ConfigurationFileOutline(parsing: try String(contentsOfFile: template, encoding: .utf8), file: template)
            for key in ["api.base-url", "auth.method", "auth.client-id"] {
                #expect(outline.contains(key), "\(key) is not in the template")
            }
        }
    }

    @Test func leavesSystemdDirectoriesToSystemd() async throws {
        try await ConfigurationFixture.with { fixture in
            var environment = try fixture.credentials()
            environment["STATE_DIRECTORY"] = "/var/lib/errorbusd-unit"
            environment["RUNTIME_DIRECTORY"] = "/run/errorbusd-unit"
            let configuration = try DaemonConfiguration.load(file: Self.examplePath, environment: environment)
            #expect(configuration.state.directory == "/var/lib/errorbusd-unit")
            #expect(configuration.control.socketPath == "/run/errorbusd-unit/io.errorbus.Control")
        }
    }

    /// Every key is in the example, with a comment above it; the secret files (`client-secret-file`,
    /// `token-file`, …) are there commented out, since systemd passes the secrets.
    @Test func documentsEveryKey() throws {
        let text = try String(contentsOfFile: Self.examplePath, encoding: .utf8)
        let outline = try ConfigurationFileOutline(parsing: text, file: Self.examplePath)
        let lines = text.split(separator: "\n", omittingEmptySubsequences: false)
        let secretFiles = DaemonConfiguration.Auth.SecretKind.allCases.map(\.fileKey) + ["api.proxy-password-file"]

        for (key, _) in ConfigurationKeys.all where !secretFiles.contains(key) {
            let line = try #require(outline.line(of: key), "\(key) is missing from the example")
            #expect(lines[line - 2].trimmingCharacters(in: .whitespaces).hasPrefix("#"), "\(key) has no comment above it")
        }
        for key in secretFiles {
            #expect(!outline.contains(key))
            let name = key.drop { $0 != "." }.dropFirst()
            #expect(text.contains("\n  # \(name): /etc/errorbusd/"), "\(key) is not shown commented out")
        }
    }
}

/// `etc/errorbusd/examples/`: one configuration per kind of API, each loading as it is with the
/// credentials its comments say to install.
@Suite struct ConfigurationContractExampleTests {
    static let directory = URL(fileURLWithPath: ConfigurationExampleTests.examplePath).deletingLastPathComponent().appendingPathComponent("examples").path

    /// Loads example `name` with a credentials directory holding `credentials`.
    static func load(_ name: String, credentials: [String: String]) async throws -> DaemonConfiguration {
        try await ConfigurationFixture.with { fixture in
            for (credential, content) in credentials { try fixture.write("credentials/\(credential)", content) }
            return try DaemonConfiguration.load(file: directory + "/" + name, environment: ["CREDENTIALS_DIRECTORY": fixture.directory + "/credentials"])
        }
    }

    @Test func everyExampleIsTested() throws {
        let examples = try FileManager.default.contentsOfDirectory(atPath: Self.directory).sorted()
        #expect(examples == ["bearer-api.yaml", "mtls.yaml", "s3.yaml", "sandbox.yaml", "webdav.yaml"])
    }

    @Test func theSandboxExampleIsTheDefaults() async throws {
        let configuration = try await Self.load("sandbox.yaml", credentials: ["client-secret": "s3cret\n"])
        #expect(configuration.api == DaemonConfiguration.API())
        #expect(configuration.auth.method == .oauth2ClientCredentials)
        #expect(configuration.auth.secret.value == "s3cret")
    }

    @Test func theWebDAVExamplePutsEachFileUnderItsNameWithBasicAuth() async throws {
        let configuration = try await Self.load("webdav.yaml", credentials: ["password": "pw\n"])
        let contract = configuration.api.uploadContract
        #expect(contract.method == .put)
        #expect(contract.url.render(UploadItem(sha256: "", name: "report 1.txt", size: 1)) == "https://dav.example.net/dav/incoming/report%201.txt")
        #expect(contract.idempotencyHeader == nil && contract.receipt == nil)
        #expect(contract.delivered == DeliveredStatuses(statuses: [201, 204]))
        #expect(configuration.auth.method == .basic && configuration.auth.user == "errorbus" && configuration.auth.secret.value == "pw")
    }

    @Test func theBearerExamplePostsAMultipartFormWithAKeyFromACredential() async throws {
        let configuration = try await Self.load("bearer-api.yaml", credentials: ["token": "t\n", "api-key": "k\n"])
        let contract = configuration.api.uploadContract
        #expect(contract.method == .post && contract.body == .multipart(field: "file"))
        #expect(contract.headers.map { $0.value.render(UploadItem(sha256: "", name: "", size: 0)) } == ["acme", "k"])
        #expect(configuration.auth.method == .bearer && configuration.auth.secret.value == "t")
        #expect(LoaderService.Settings(configuration).resources.map(\.signedIn) == [true, false])
    }

    @Test func theObjectStorageExampleSignsEachObjectUnderItsKeyAndAsksForItsChecksum() async throws {
        let configuration = try await Self.load("s3.yaml", credentials: ["secret-access-key": "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY\n"])
        let contract = configuration.api.uploadContract
        var item = UploadItem(sha256: "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08", name: "report 1.txt", size: 4)
        item.queuedAt = Date(timeIntervalSince1970: 1_795_000_000)  // 2026-11-18T11:06:40Z
        let url = contract.url.render(item)
        #expect(url.hasPrefix("https://s3.eu-central-1.amazonaws.com/fleet-logs/") && url.hasSuffix("/2026/11/18/report%201.txt"), "\(url)")
        #expect(contract.idempotencyHeader == nil)
        #expect(contract.headers.map { "\($0.name): \($0.value.render(item))" } == [
            "x-amz-sdk-checksum-algorithm: SHA256", "x-amz-checksum-sha256: n4bQgYhMfWWaL+qgxVrQFaO/TxsrC4Is0V1sFbDwCgg=",
        ])
        #expect(contract.receipt == .header(name: "x-amz-checksum-sha256", value: UploadTemplate(parts: [.sha256Base64])))
        #expect(contract.parts == .init(above: 64 << 20, size: 16 << 20, parallel: 4))
        // A file that would need more than 10,000 parts of 16 MiB (156.25 GiB) gets larger ones.
        #expect(contract.parts?.partSize(for: 200 << 30) == 21 << 20)
        let auth = configuration.auth
        #expect(auth.method == .awsSigV4 && auth.accessKeyID == "AKIAIOSFODNN7EXAMPLE" && auth.region == "eu-central-1" && auth.service == "s3")
        #expect(auth.secret.value == "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY" && auth.sessionToken == nil)

        // Temporary credentials: the session token too, when the unit loads one.
        let temporary = try await Self.load("s3.yaml", credentials: ["secret-access-key": "s\n", "session-token": "FQoGZXIvYXdzEXAMPLE\n"])
        #expect(temporary.auth.sessionToken?.value == "FQoGZXIvYXdzEXAMPLE")
        #expect(AuthService.Settings(temporary).signing?.credentials.sessionToken == "FQoGZXIvYXdzEXAMPLE")
    }

    @Test func theMutualTLSExampleReadsACertificateAndKey() async throws {
        let scratch = try ScratchDirectory("mtls-example")
        let certificates = try await TestCertificates.make(in: scratch)
        let configuration = try await Self.load(
            "mtls.yaml",
            credentials: [
                "client-certificate": try String(contentsOfFile: certificates.clientCertificate, encoding: .utf8),
                "client-key": try String(contentsOfFile: certificates.clientKey, encoding: .utf8),
            ]
        )
        #expect(configuration.auth.method == .mtls)
        #expect(configuration.auth.clientIdentity?.certificateChain.count == 1)
        #expect(configuration.api.caFile == "/etc/errorbusd/api-ca.pem")
    }
}

extension ConfigurationContractExampleTests {
    /// The README's "Your API" YAML, as a reader would copy it, loads and means what it says.
    @Test func theREADMEsWebDAVConfigurationLoads() async throws {
        let readme = try String(contentsOfFile: Self.directory + "/../../../README.md", encoding: .utf8)
        let section = try #require(readme.components(separatedBy: "### Your API").dropFirst().first)
        let yaml = try #require(section.components(separatedBy: "```yaml\n").dropFirst().first?.components(separatedBy: "```").first)
        let configuration = try await ConfigurationFixture.with { fixture in
            try fixture.write("credentials/password", "pw\n")
            return try DaemonConfiguration.load(
                file: try fixture.write("readme.yaml", yaml),
                environment: ["CREDENTIALS_DIRECTORY": fixture.directory + "/credentials"]
            )
        }
        #expect(configuration.auth.method == .basic)
        #expect(configuration.api.uploadContract.url.description == "https://dav.example.net/dav/incoming/{name}")
        #expect(configuration.api.upload.receipt == nil)
    }
}
