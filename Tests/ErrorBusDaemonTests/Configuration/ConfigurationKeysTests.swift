import Configuration
import ErrorBus
import Synchronization
import Testing

@testable import ErrorBusDaemon

@Suite struct ConfigurationKeysTests {
    /// Collects the keys a `ConfigReader` was asked for.
    final class KeyCollector: AccessReporter {
        let keys = Mutex<Set<String>>([])

        func report(_ event: AccessEvent) {
            _ = keys.withLock { $0.insert(event.metadata.key.description) }
        }
    }

    /// The known-key list the unknown-key check uses is exactly what the reader reads: a key
    /// added to one and not the other fails here.
    @Test func readerReadsExactlyTheKnownKeys() async throws {
        try await ConfigurationFixture.with { fixture in
            let collector = KeyCollector()
            let reader = ConfigReader(provider: InMemoryProvider(values: [:]), accessReporter: collector)
            _ = try DaemonConfiguration(reader: reader, environment: try fixture.credentials())
            let read = collector.keys.withLock { $0 }
            #expect(read == Set(ConfigurationKeys.all.map(\.key)))
        }
    }

    @Test func suggestions() {
        #expect(ConfigurationKeys.suggestion(for: "concurency", in: "sync") == "sync.concurrency")
        #expect(ConfigurationKeys.suggestion(for: "maxFileSize", in: "sync") == "sync.max-file-size")
        #expect(ConfigurationKeys.suggestion(for: "max_file_size", in: "sync") == "sync.max-file-size")
        #expect(ConfigurationKeys.suggestion(for: "client-id", in: "api") == "auth.client-id")
        #expect(ConfigurationKeys.suggestion(for: "retry-budget", in: "") == "bus.retry-budget")
        #expect(ConfigurationKeys.suggestion(for: "colour", in: "") == nil)
    }

    @Test func editDistance() {
        #expect(ConfigurationKeys.editDistance("kitten", "sitting") == 3)
        #expect(ConfigurationKeys.editDistance("", "abc") == 3)
        #expect(ConfigurationKeys.editDistance("same", "same") == 0)
    }

    @Test func environmentVariableNamesFollowTheLibrary() async throws {
        try await ConfigurationFixture.with { fixture in
            // Every key can be set from the environment under the documented name.
            var environment = try fixture.credentials()
            environment["ERRORBUSD_BUS_RETRY_BUDGET_FLOOR_PER_MINUTE"] = "3"
            environment["ERRORBUSD_SYNC_MAX_FILE_SIZE"] = "1KiB"
            environment["ERRORBUSD_API_BASE_URL"] = "http://10.0.0.1:9000"
            environment["ERRORBUSD_BUS_GROUPING"] = "per-job"
            let configuration = try DaemonConfiguration.load(file: nil, environment: environment)
            #expect(configuration.bus.retryBudget.floorPerMinute == 3)
            #expect(configuration.sync.maxFileSize == 1_024)
            #expect(configuration.api.baseURL == "http://10.0.0.1:9000")
            #expect(configuration.bus.grouping == .perJob)
        }
    }
}
