import Foundation
import Testing

@testable import ErrorBusDaemon

/// `errorbusd.yaml.d/*.yaml`: read after the file in name order, a later key winning and a list
/// replacing a list, every error naming the file it is in; the environment over them all.
@Suite struct ConfigurationDropInTests {
    @Test func dropInsOverrideTheFileInNameOrder() async throws {
        try await ConfigurationFixture.with { fixture in
            try fixture.write("errorbusd.yaml.d/20-late.yaml", "sync:\n  concurrency: 3\nloader:\n  resources: [c.txt=1m]\n")
            try fixture.write("errorbusd.yaml.d/10-early.yaml", "sync:\n  concurrency: 2\n  max-file-size: 1MiB\n")
            try fixture.write("errorbusd.yaml.d/README", "not: read\n")
            let configuration = try await fixture.load(
                "sync:\n  concurrency: 1\n  rescan-interval: 1m\nloader:\n  resources: [a.txt=1m, b.txt=1m]\n"
            )
            #expect(configuration.sync.concurrency == 3)
            #expect(configuration.sync.maxFileSize == 1 << 20)
            #expect(configuration.sync.rescanInterval == .seconds(60))
            #expect(configuration.loader.resources.map(\.name) == ["c.txt"])
        }
    }

    @Test func theEnvironmentWinsOverEveryFile() async throws {
        try await ConfigurationFixture.with { fixture in
            try fixture.write("errorbusd.yaml.d/10-local.yaml", "sync:\n  concurrency: 2\n")
            let configuration = try await fixture.load("", environment: ["ERRORBUSD_SYNC_CONCURRENCY": "7"])
            #expect(configuration.sync.concurrency == 7)
        }
    }

    @Test func anErrorNamesTheDropInAndItsLine() async throws {
        try await ConfigurationFixture.with { fixture in
            let dropIn = try fixture.write("errorbusd.yaml.d/10-local.yaml", "# local\nsync:\n  concurrency: sixteen\n")
            let bad = try #require(try await fixture.loadError("sync:\n  concurrency: 4\n"))
            #expect(bad.description == "\(dropIn):3: sync.concurrency: expected an integer between 1 and 1024, got \"sixteen\"")

            try fixture.write("errorbusd.yaml.d/10-local.yaml", "sync:\n  concurency: 4\n")
            let unknown = try #require(try await fixture.loadError(""))
            #expect(unknown.description == "\(dropIn):2: sync.concurency: unknown key; did you mean sync.concurrency?")

            // A cross-key rule blames the file that set the key it names.
            try fixture.write("errorbusd.yaml.d/10-local.yaml", "bus:\n  backoff:\n    cap: 500ms\n")
            let rule = try #require(try await fixture.loadError(""))
            #expect(rule.description == "\(dropIn):3: bus.backoff.cap: must be at least bus.backoff.base (1s), got \"500ms\"")
        }
    }

    @Test func theOriginOfEveryValueIsShownWithoutSecrets() async throws {
        try await ConfigurationFixture.with { fixture in
            let file = try fixture.write("errorbusd.yaml", "sync:\n  concurrency: 4\napi:\n  upload:\n    headers: [\"X-Key: literal-secret\"]\n")
            let dropIn = try fixture.write("errorbusd.yaml.d/10-local.yaml", "log:\n  level: debug\n")
            var environment = try fixture.credentials()
            environment["ERRORBUSD_SYNC_MAX_FILE_SIZE"] = "1MiB"
            let (configuration, sources) = try DaemonConfiguration.loadWithSources(file: file, environment: environment)
            let lines = configuration.describe(sources).split(separator: "\n").map(String.init)
            #expect(lines.contains("sync.concurrency: 4  # \(file):2"))
            #expect(lines.contains("log.level: debug  # \(dropIn):2"))
            #expect(lines.contains("sync.max-file-size: 1MiB  # environment variable ERRORBUSD_SYNC_MAX_FILE_SIZE"))
            #expect(lines.contains("sync.rescan-interval: 30s  # default"))
            #expect(lines.contains("api.upload.headers: [X-Key]  # \(file):5"))
            #expect(lines.count == ConfigurationKeys.table.count)
            #expect(!lines.joined().contains("literal-secret") && !lines.joined().contains("s3cret"))
        }
    }
}
