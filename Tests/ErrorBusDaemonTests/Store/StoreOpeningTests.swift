@testable import ErrorBusStore
import Foundation
import GRDB
import InMemoryLogging
import Logging
import Testing

import ErrorBusDaemon

@Suite struct StoreOpeningTests {
    @Test func createsItsDirectoryPrivateAndMigratesAnEmptyDatabase() async throws {
        let logs = InMemoryLogHandler()
        try await StoreTestDirectory.withStore(logs: logs) { store, directory in
            let permissions = try FileManager.default.attributesOfItem(atPath: directory)[.posixPermissions] as? Int
            #expect(permissions == 0o700)
            #expect(store.path == directory + "/errorbusd.sqlite")

            let (tables, migrations, journalMode) = try await store.pool.read { db in
                (
                    try String.fetchAll(db, sql: "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'grdb%' ORDER BY name"),
                    try StoreSchema.migrator.appliedIdentifiers(db),
                    try String.fetchOne(db, sql: "PRAGMA journal_mode")
                )
            }
            #expect(tables == ["incident", "job", "job_count", "multipart_part", "multipart_upload", "parked_count", "resource", "store_format", "store_writer"])
            #expect(migrations == Set(StoreSchema.migrator.migrations))
            #expect(journalMode == "wal")
            #expect(try store.checkIntegrity() == ["ok"])
            #expect(logs.entries.contains { "\($0.message)" == "Job store opened" && $0.metadata["migrations"] == "1 jobs, 2 incidents, 3 resources, 4 job counts, 5 backlog bytes, dead-letter age, 6 resource validators, 7 job digest, 8 incident uuid, 9 job file stamp, 10 binary job keys, 11 job isolation, 12 store format, 13 parked jobs, 14 multipart uploads" })
        }
    }

    /// A store as errorbusd 0.2.0 left it (its schema ends at migration 5; shipped migrations are
    /// never edited, so these are its own), with work in every state: a package upgrade opens it
    /// with the new errorbusd, which migrates it and goes on with that work.
    @Test func aStoreWrittenByRelease020IsMigratedWithItsWork() async throws {
        try await StoreTestDirectory.with { directory in
            let queue = try DatabaseQueue(path: directory + "/" + JobStore.databaseFileName)
            try StoreSchema.migrator.migrate(queue, upTo: "5 backlog bytes, dead-letter age")
            try await queue.write { db in
                for (index, state) in ["queued", "inFlight", "deadLettered", "delivered"].enumerated() {
                    try db.execute(
                        sql: """
                            INSERT INTO job (id, service, fileName, path, size, state, attempts, reason, incident, createdAt, updatedAt)
                            VALUES (?, 'sync', ?, ?, ?, ?, ?, ?, ?, ?, ?)
                            """,
                        arguments: [
                            "job-\(index)", "file-\(index).bin", "/outbox/file-\(index).bin", 100 * (index + 1), state, index,
                            state == "deadLettered" ? "Rejected by the API" : nil, state == "deadLettered" ? 3 : nil, 1_000 + index, 1_000 + index,
                        ]
                    )
                }
                try db.execute(sql: "INSERT INTO resource (name, etag, updatedAt) VALUES ('catalog', '\"v1\"', 5)")
            }
            try queue.close()

            let logs = InMemoryLogHandler()
            let store = try JobStore(directory: directory, logger: StoreTestDirectory.logger(logs))
            #expect(logs.entries.contains { $0.metadata["migrations"] == "6 resource validators, 7 job digest, 8 incident uuid, 9 job file stamp, 10 binary job keys, 11 job isolation, 12 store format, 13 parked jobs, 14 multipart uploads" })
            let counts = try store.counts()
            #expect((counts.queued, counts.inFlight, counts.deadLettered, counts.delivered) == (1, 1, 1, 1))
            #expect(try store.backlog().bytes == 100 + 200)
            // A job 0.2.0 had under way is queued again, and both go, oldest first.
            #expect(try store.requeueInterrupted() == 1)
            #expect(try await store.claimQueued(limit: 10).map(\.id) == ["job-0", "job-1"])
            let dead = try store.deadLetters()
            #expect(dead.map(\.id) == ["job-2"])
            #expect(dead.first?.reason == "Rejected by the API" && dead.first?.incident == 3 && dead.first?.digest == nil)
            #expect(try store.retryDeadLetters() == 1)
            #expect(try store.checkIntegrity() == ["ok"])
            try await store.close()
        }
    }

    @Test func reopeningKeepsEverythingAndMigratesNothing() async throws {
        try await StoreTestDirectory.with { directory in
            let first = try JobStore(directory: directory, logger: StoreTestDirectory.logger())
            _ = try await first.enqueue(StoreTestDirectory.newJobs(3))
            try first.setValidators(ResourceValidators(etag: "\"v1\""), forResource: "catalog", url: "http://api.test/catalog")
            try await first.close()

            let logs = InMemoryLogHandler()
            let second = try JobStore(directory: directory, logger: StoreTestDirectory.logger(logs))
            #expect(try second.counts().queued == 3)
            #expect(try second.validators(forResource: "catalog", url: "http://api.test/catalog")?.etag == "\"v1\"")
            #expect(logs.entries.contains { $0.metadata["migrations"] == "none" })
            try await second.close()
        }
    }

    @Test(arguments: [(StoreDurability.processCrash, 1), (.powerLoss, 2)])
    func durabilitySetsTheWritersSynchronousMode(durability: StoreDurability, pragma: Int) async throws {
        try await StoreTestDirectory.withStore(durability: durability) { store, _ in
            #expect(store.durability == durability)
            let synchronous = try await store.pool.writeWithoutTransaction { db in
                try Int.fetchOne(db, sql: "PRAGMA synchronous")
            }
            #expect(synchronous == pragma)
        }
    }

    @Test func aSecondStoreOnTheSameDirectoryIsRefusedUntilTheFirstCloses() async throws {
        try await StoreTestDirectory.withStore { store, directory in
            let error = #expect(throws: StoreError.self) {
                _ = try JobStore(directory: directory, logger: StoreTestDirectory.logger())
            }
            #expect(error?.isInUse == true)
            #expect(error?.isFatal == true)
            #expect(error?.description.contains(directory) == true)

            try await store.close()
            let again = try JobStore(directory: directory, logger: StoreTestDirectory.logger())
            try await again.close()
        }
    }

    @Test func aDamagedDatabaseSaysWhatToDo() async throws {
        try await StoreTestDirectory.with { directory in
            let path = directory + "/errorbusd.sqlite"
            try Data(repeating: 0x42, count: 8_192).write(to: URL(fileURLWithPath: path))
            let error = #expect(throws: StoreError.self) {
                _ = try JobStore(directory: directory, logger: StoreTestDirectory.logger())
            }
            #expect(error?.isCorrupt == true)
            #expect(error?.isFatal == true)
            #expect(error?.path == path)
            #expect(error?.description.contains("move errorbusd.sqlite and its -wal and -shm files aside") == true)
        }
    }

    @Test func aStateDirectoryThatIsAFileOrHasNoParentIsNamed() async throws {
        try await StoreTestDirectory.with { directory in
            let file = directory + "/file"
            #expect(FileManager.default.createFile(atPath: file, contents: Data()))
            let notADirectory = #expect(throws: StoreError.self) {
                _ = try JobStore(directory: file, logger: StoreTestDirectory.logger())
            }
            #expect(notADirectory?.description.contains(file) == true)
            #expect(notADirectory?.isFatal == true)

            let orphan = directory + "/missing/state"
            let noParent = #expect(throws: StoreError.self) {
                _ = try JobStore(directory: orphan, logger: StoreTestDirectory.logger())
            }
            #expect(noParent?.description.contains(orphan) == true)
            #expect(noParent?.description.contains("No such file or directory") == true)
        }
    }

    @Test func aClosedStoreRefusesWorkAndClosesOnce() async throws {
        try await StoreTestDirectory.with { directory in
            let store = try JobStore(directory: directory, logger: StoreTestDirectory.logger())
            _ = try await store.enqueue(StoreTestDirectory.newJobs(1))
            try await store.close()
            try await store.close()

            let enqueue = await #expect(throws: StoreError.self) { try await store.enqueue(StoreTestDirectory.newJobs(1, prefix: "late")) }
            #expect(enqueue?.isClosed == true)
            #expect(enqueue?.isFatal == false)
            let read = #expect(throws: StoreError.self) { try store.counts() }
            #expect(read?.isClosed == true)
            await #expect(throws: StoreError.self) { try await store.markDelivered("job-0") }

            // Closing checkpointed the WAL into the database and truncated it.
            let wal = (try? FileManager.default.attributesOfItem(atPath: directory + "/errorbusd.sqlite-wal"))?[.size] as? Int
            #expect(wal == nil || wal == 0)
        }
    }
}
