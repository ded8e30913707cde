import ErrorBus
import ErrorBusStore
import ErrorBusTesting
import Foundation
import InMemoryLogging
import Logging
import Testing

@testable import ErrorBusDaemon

/// The ingest on its own, with a real store and a real outbox directory.
@Suite(.timeLimit(.minutes(1)))
struct OutboxIngestTests {
    /// A stop (SIGTERM) cancels the ingest while it inspects files: nothing went wrong, and
    /// nothing is logged as an error.
    @Test func aStopDuringTheIngestIsNoError() async throws {
        let logs = InMemoryLogHandler()
        try await StoreTestDirectory.withStore { store, state in
            let outbox = (state as NSString).deletingLastPathComponent + "/outbox"
            try FileManager.default.createDirectory(atPath: outbox, withIntermediateDirectories: false)
            try Data("content".utf8).write(to: URL(fileURLWithPath: outbox + "/report.bin"))
            let logger = Logger(label: "ingest-tests") { _ in logs }
            let bus = ErrorBus(clock: ManualClock(), logger: logger)
            let seen = SeenFiles()
            let leases = WriterLeases(logger: logger)
            let storeFailures = StoreFailures(bus: bus, logger: logger, minFreeSpace: 0)
            let removal = DeliveredFileRemoval(afterDelivery: .delete, seen: seen, leases: leases, logger: logger)
            let ingest = OutboxIngest(
                settings: .init(outbox: outbox, maxFileSize: 1 << 20, rescanInterval: .seconds(60), settleTime: .zero, uploads: Job(id: "", service: "sync", scope: "https://api.test", realm: "api.test")),
                store: store,
                bus: bus,
                clock: Timeline(ManualClock()),
                seen: seen,
                duplicates: DuplicateFiles(),
                replaced: ReplacedJobs(),
                overflow: BacklogOverflow(logger: logger),
                unqueued: UnqueuedFiles(),
                storeFailures: storeFailures,
                parkedUploads: ParkedUploads(store: store, bus: bus, storeFailures: storeFailures, logger: logger, wake: AsyncStream.makeStream(of: Void.self).continuation),
                leases: leases,
                logger: logger,
                deliveredFiles: { path, name, read in removal.remove(path, fileName: name, read: read) },
                queued: {}
            )
            let stopped = Task {
                withUnsafeCurrentTask { $0?.cancel() }
                return await ingest.ingest(["report.bin"], announced: true)
            }
            _ = await stopped.value
            #expect(!logs.entries.contains { $0.level >= .error }, "\(logs.entries.map { "\($0.level) \($0.message)" })")
            #expect(try store.counts().total == 0)
        }
    }
}
