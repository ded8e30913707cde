@testable import ErrorBusStore
import Foundation
import GRDB
import Testing

/// Job keys that are hex SHA-256 digests, stored as their 32 bytes: found, claimed, delivered and
/// told as their hex; migrated from the text earlier stores hold; turned back for an errorbusd
/// from before by `errorbusd --downgrade-store`.
@Suite struct StoreJobKeyTests {
    static func digest(_ seed: String) -> String {
        String(repeating: seed, count: 64 / seed.count)
    }

    static func file(_ id: String) -> OutboxFile {
        OutboxFile(id: id, service: "sync", fileName: "\(id.prefix(8)).bin", path: "/o/\(id.prefix(8)).bin", size: 10)
    }

    /// `typeof(id)` of each job, by its key as the daemon tells it.
    static func storedTypes(_ store: JobStore) async throws -> [String: String] {
        try await store.pool.read { db in
            let rows = try Row.fetchAll(db, sql: "SELECT CASE typeof(id) WHEN 'blob' THEN lower(hex(id)) ELSE id END, typeof(id) FROM job")
            return Dictionary(uniqueKeysWithValues: rows.map { ($0[0] as String, $0[1] as String) })
        }
    }

    @Test func aDigestIsStoredAsItsBytesAndEveryOtherKeyAsItsText() async throws {
        let abc = Self.digest("abc0"), upper = Self.digest("ABC0"), short = "abc0"
        try await StoreTestDirectory.withStore { store, _ in
            _ = try await store.enqueue([abc, upper, short].map(Self.file))
            #expect(try await Self.storedTypes(store) == [abc: "blob", upper: "text", short: "text"])
            let size = try await store.pool.read { db in try Int.fetchOne(db, sql: "SELECT length(id) FROM job WHERE typeof(id) = 'blob'") }
            #expect(size == 32)

            // Found, claimed and delivered by its hex; the same content again is a duplicate.
            #expect(try store.job(abc)?.fileName == "abc0abc0.bin")
            #expect(try store.jobs(ids: [short, abc]).map(\.id) == [short, abc])
            #expect(try await store.claimQueued(limit: 1).map(\.id) == [abc])
            #expect(try store.markDelivered([abc]) == 1)
            let again = try await store.enqueue([Self.file(abc)])
            #expect(again.inserted.isEmpty && again.alreadyDelivered.map(\.id) == [abc])
        }
    }

    @Test func aHexPrefixFindsTheDigestsThatStartWithItBesideTheTextKeys() async throws {
        let ids = [
            Self.digest("ab00"), Self.digest("abbf"), Self.digest("abc0"), Self.digest("abcf"), Self.digest("abd0"),
            Self.digest("ffff"), "abc", "abcz",
        ]
        try await StoreTestDirectory.withStore { store, _ in
            _ = try await store.enqueue(ids.map(Self.file))
            // Text keys sort before the digests' bytes.
            #expect(try store.jobs(idPrefix: "abc", limit: 10).jobs.map(\.id) == ["abc", "abcz", Self.digest("abc0"), Self.digest("abcf")])
            // An odd number of digits; a prefix ending in f; a whole digest.
            #expect(try store.jobs(idPrefix: "abb", limit: 10).jobs.map(\.id) == [Self.digest("abbf")])
            #expect(try store.jobs(idPrefix: "abcf", limit: 10).jobs.map(\.id) == [Self.digest("abcf")])
            #expect(try store.jobs(idPrefix: "f", limit: 10).jobs.map(\.id) == [Self.digest("ffff")])
            #expect(try store.jobs(idPrefix: "ABCF", limit: 10).jobs.map(\.id) == [Self.digest("abcf")])
            #expect(try store.jobs(idPrefix: Self.digest("abd0"), limit: 10).jobs.map(\.id) == [Self.digest("abd0")])
            #expect(try store.jobs(idPrefix: "", limit: 10).total == ids.count)
            let page = try store.jobs(idPrefix: "ab", limit: 3)
            #expect(page.total == 7 && page.jobs.map(\.id) == ["abc", "abcz", Self.digest("ab00")])
        }
    }

    @Test func theRangeOfAHexPrefixIsItsBytesUpToTheNextPrefixOfItsLength() {
        #expect(StoredJobKey.digestRange(prefix: "abc").map { [$0.start, $0.end] } == [Data([0xAB, 0xC0]), Data([0xAB, 0xD0])])
        #expect(StoredJobKey.digestRange(prefix: "a9").map { [$0.start, $0.end] } == [Data([0xA9]), Data([0xAA])])
        #expect(StoredJobKey.digestRange(prefix: "aff").map { [$0.start, $0.end] } == [Data([0xAF, 0xF0]), Data([0xB0])])
        #expect(StoredJobKey.digestRange(prefix: "ff").map { [$0.start, $0.end] } == [Data([0xFF]), nil])
        #expect(StoredJobKey.digestRange(prefix: "abg") == nil)
        // Bytes have no case: an operator's ABC finds the digests abc….
        #expect(StoredJobKey.digestRange(prefix: "ABC").map { [$0.start, $0.end] } == [Data([0xAB, 0xC0]), Data([0xAB, 0xD0])])
    }

    /// A store of migration 9 (text keys) with work under way: opened, its digests become bytes,
    /// the rest stays text, and the work goes on; turned back for 0.2.0 (the release before the
    /// migration), they are the very text they were, and opened again, bytes again.
    @Test func textKeysBecomeBytesWithTheirWorkAndTheDowngradeTurnsThemBack() async throws {
        let queued = Self.digest("0123"), dead = Self.digest("fedc"), other = "job-1"
        try await StoreTestDirectory.with { directory in
            let path = directory + "/" + JobStore.databaseFileName
            let queue = try DatabaseQueue(path: path)
            try StoreSchema.migrator.migrate(queue, upTo: "9 job file stamp")
            try await queue.write { db in
                for (id, state) in [(queued, "queued"), (dead, "deadLettered"), (other, "queued")] {
                    try db.execute(
                        sql: "INSERT INTO job (id, service, fileName, path, size, state, createdAt, updatedAt) VALUES (?, 'sync', ?, ?, 10, ?, 1, 1)",
                        arguments: [id, "\(id.prefix(8)).bin", "/o/\(id.prefix(8)).bin", state]
                    )
                }
            }
            try queue.close()

            let store = try JobStore(directory: directory, logger: StoreTestDirectory.logger())
            #expect(try await Self.storedTypes(store) == [queued: "blob", dead: "blob", other: "text"])
            #expect(try store.deadLetters().map(\.id) == [dead])
            #expect(try store.jobs(idPrefix: "0123", limit: 10).jobs.map(\.id) == [queued])
            #expect(try await store.claimQueued(limit: 10).map(\.id) == [queued, other])
            #expect(try store.markDelivered([queued]) == 1)
            #expect(try store.checkIntegrity() == ["ok"])
            try await store.close()

            #expect(try JobStore.requirements(directory: directory, newerThan: "0.2.0") == ["13 parked jobs", "10 binary job keys"])
            #expect(try JobStore.downgrade(directory: directory, to: "0.2.0", logger: StoreTestDirectory.logger()) == ["13 parked jobs", "10 binary job keys"])
            #expect(try JobStore.requirements(directory: directory, newerThan: "0.2.0") == [])
            let undo = try DatabaseQueue(path: path)
            let (rows, migrations) = try await undo.read { db in
                (
                    try Row.fetchAll(db, sql: "SELECT id, typeof(id) AS type FROM job ORDER BY seq").map { [$0["id"] as String, $0["type"] as String] },
                    try StoreSchema.migrator.appliedIdentifiers(db)
                )
            }
            #expect(rows == [[queued, "text"], [dead, "text"], [other, "text"]])
            #expect(!migrations.contains("13 parked jobs") && !migrations.contains("10 binary job keys") && migrations.contains("9 job file stamp"))
            try undo.close()

            let again = try JobStore(directory: directory, logger: StoreTestDirectory.logger())
            #expect(try await Self.storedTypes(again) == [queued: "blob", dead: "blob", other: "text"])
            #expect(try again.deadLetters().map(\.id) == [dead])
            try await again.close()
            #expect(try JobStore.requirements(directory: directory, newerThan: "0.2.0") == ["13 parked jobs", "10 binary job keys"])
        }
    }
}
