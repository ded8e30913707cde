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

    @Test func loadsAsTheDefaults() async throws {
        try await ConfigurationFixture.with { fixture in
            let configuration = try DaemonConfiguration.load(file: Self.examplePath, environment: try fixture.credentials())
            #expect(configuration == fixture.defaults)
            // What the demo against the local sandbox needs.
            #expect(configuration.api.baseURL == "http://127.0.0.1:8080")
            #expect(configuration.auth.secretFiles.isEmpty)
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
        let secretFiles = DaemonConfiguration.Auth.SecretKind.allCases.map(\.fileKey)

        for (key, _) in ConfigurationKeys.all where !secretFiles.contains(key) {
            let line = try #require(outline.line(of: key), "\(key) is missing from the example")
            #expect(lines[line - 2].trimmingCharacters(in: .whitespaces).hasPrefix("#"), "\(key) has no comment above it")
        }
        for key in secretFiles {
            #expect(!outline.contains(key))
            let name = key.dropFirst("auth.".count)
            #expect(text.contains("\n  # \(name): /etc/errorbusd/"), "\(key) is not shown commented out")
        }
    }
}
