import ErrorBusDaemon
import ErrorBusStore
import ErrorBusSupport
import Foundation
import InMemoryLogging
import Logging

/// A fresh directory under the system's temporary directory for one test, removed afterwards,
/// and the pieces the store tests share.
enum StoreTestDirectory {
    /// Runs `body` with a new, empty directory's path, then removes the directory.
    static func with<T>(_ body: (String) async throws -> T) async throws -> T {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("errorbus-store-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: false)
        defer { try? FileManager.default.removeItem(atPath: path) }
        return try await body(path)
    }

    /// Runs `body` with a store opened in a fresh directory's `state` subdirectory (created by
    /// the store), closing it afterwards.
    static func withStore<T>(
        durability: StoreDurability = .processCrash,
        deliveryGatherTime: Duration = JobStore.defaultDeliveryGatherTime,
        clock: WallClock = .system,
        logs: InMemoryLogHandler = InMemoryLogHandler(),
        _ body: (JobStore, String) async throws -> T
    ) async throws -> T {
        try await with { directory in
            let state = directory + "/state"
            let store = try JobStore(directory: state, durability: durability, deliveryGatherTime: deliveryGatherTime, clock: clock, logger: logger(logs))
            do {
                let result = try await body(store, state)
                try await store.close()
                return result
            } catch {
                try? await store.close()
                throw error
            }
        }
    }

    /// A logger that keeps what it is given in `logs`.
    static func logger(_ logs: InMemoryLogHandler = InMemoryLogHandler()) -> Logger {
        Logger(label: "store-tests") { _ in logs }
    }

    /// `count` new sync jobs whose ids start with `prefix`.
    static func newJobs(_ count: Int, prefix: String = "job") -> [OutboxFile] {
        (0..<count).map { index in
            OutboxFile(
                id: "\(prefix)-\(index)",
                service: "sync",
                fileName: "\(prefix)-\(index).json",
                path: "/var/spool/errorbusd/outbox/\(prefix)-\(index).json",
                size: Int64(100 + index)
            )
        }
    }
}
