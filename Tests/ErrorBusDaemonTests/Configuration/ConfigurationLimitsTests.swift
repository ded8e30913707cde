import ErrorBusDaemon
import ErrorBusHTTP
import Foundation
import Testing

/// The keys of bounded loss, health, metrics and classification: read as written, refused with
/// the key and the reason when they make no sense.
@Suite struct ConfigurationLimitsTests {
    @Test func limitsHealthMetricsAndClassificationAreRead() async throws {
        try await ConfigurationFixture.with { fixture in
            let configuration = try await fixture.load(
                """
                api:
                  classify:
                    - 403 https://api.example.com/problems/disk-full = transient
                    - 422=permanent
                sync:
                  max-age: 48h
                  backlog:
                    max-bytes: 2GiB
                    max-files: 50000
                    overflow: drop-oldest
                  dead-letters:
                    max-count: 500
                    max-age: null
                health:
                  oldest-job:
                    warning: 5m
                    critical: null
                  free-space:
                    warning: 2GiB
                    critical: 1GiB
                metrics:
                  listen: "[::1]:9464"
                """
            )
            #expect(configuration.api.classify == [
                ClassificationOverride(status: 403, problemType: "https://api.example.com/problems/disk-full", category: .transient),
                ClassificationOverride(status: 422, category: .permanent),
            ])
            #expect(configuration.sync.maxAge == .seconds(48 * 3_600))
            #expect(configuration.sync.backlog == .init(maxBytes: 2 << 30, maxFiles: 50_000, overflow: .dropOldest))
            #expect(configuration.sync.deadLetters == .init(maxCount: 500, maxAge: nil))
            #expect(configuration.health.oldestJob == .init(warning: .seconds(300), critical: nil))
            #expect(configuration.health.freeSpace == .init(warning: 2 << 30, critical: 1 << 30))
            #expect(configuration.health.parked == DaemonConfiguration.Health().parked)
            #expect(configuration.metrics.listen == .init(host: "::1", port: 9464))
            #expect(configuration.metrics.listen?.description == "[::1]:9464")
        }
    }

    @Test func theEnvironmentSetsThemToo() async throws {
        try await ConfigurationFixture.with { fixture in
            let configuration = try await fixture.load("", environment: [
                "ERRORBUSD_API_CLASSIFY": "409=transient,500=permanent",
                "ERRORBUSD_SYNC_BACKLOG_MAX_FILES": "10",
                "ERRORBUSD_METRICS_LISTEN": "0.0.0.0:9100",
            ])
            #expect(configuration.api.classify.map(\.description) == ["409=transient", "500=permanent"])
            #expect(configuration.sync.backlog.maxFiles == 10 && configuration.sync.backlog.overflow == .rejectNew)
            #expect(configuration.metrics.listen == .init(host: "0.0.0.0", port: 9100))
        }
    }

    @Test(arguments: [
        ("api:\n  classify: [\"418 = teapot\"]", "api.classify", "\"teapot\" is not a category"),
        ("api:\n  classify: [\"200=transient\"]", "api.classify", "200 is not a failure"),
        ("api:\n  classify: [\"transient\"]", "api.classify", "has no \"=CATEGORY\""),
        ("api:\n  classify: [\"4xx=transient\"]", "api.classify", "does not start with an HTTP status"),
        ("api:\n  classify: [\"422=permanent\", \"422 = transient\"]", "api.classify", "422 is classified twice"),
        ("sync:\n  backlog:\n    max-bytes: 1MiB", "sync.backlog.max-bytes", "must be at least sync.max-file-size (100MiB)"),
        ("sync:\n  backlog:\n    overflow: drop-newest", "sync.backlog.overflow", "expected one of reject-new, drop-oldest"),
        ("sync:\n  max-age: 0s", "sync.max-age", "of at least 1s"),
        ("sync:\n  dead-letters:\n    max-count: -1", "sync.dead-letters.max-count", "of at least 0"),
        ("health:\n  parked:\n    warning: 100\n    critical: 10", "health.parked.critical", "must be at least health.parked.warning (100)"),
        ("health:\n  free-space:\n    warning: 1GiB\n    critical: 2GiB", "health.free-space.critical", "must be at most health.free-space.warning"),
        ("metrics:\n  listen: localhost", "metrics.listen", "expected HOST:PORT"),
        ("metrics:\n  listen: \"::1:9464\"", "metrics.listen", "expected HOST:PORT"),
        ("metrics:\n  listen: 127.0.0.1:70000", "metrics.listen", "expected HOST:PORT"),
    ])
    func nonsenseIsRefusedWithTheKeyAndWhy(yaml: String, key: String, reason: String) async throws {
        try await ConfigurationFixture.with { fixture in
            let error = try #require(try await fixture.loadError(yaml))
            #expect(error.key == key, "\(error)")
            #expect(error.description.contains(reason), "\(error)")
            #expect(error.file == fixture.yamlPath)
        }
    }
}
