@testable import ErrorBusStore
import Foundation
import GRDB
import Testing

/// What an errorbusd must know to read a store: a store a newer errorbusd wrote in a form this
/// one does not know is refused with one line and left as it was; a store is turned back only
/// for the releases that predate what it carries, and never while errorbusd runs on it.
@Suite struct StoreFormatTests {
    /// Makes the store in `directory` look written by errorbusd 9.0.0 with a requirement this
    /// errorbusd does not know.
    static func writeAsFuture(_ directory: String) async throws {
        let queue = try DatabaseQueue(path: directory + "/" + JobStore.databaseFileName)
        try await queue.write { db in
            try db.execute(sql: "INSERT INTO grdb_migrations (identifier) VALUES ('99 jobs in parts')")
            try db.execute(sql: "INSERT INTO store_format (migration, release) VALUES ('99 jobs in parts', '9.0.0')")
            try db.execute(sql: "UPDATE store_writer SET version = '9.0.0+2.gfeedfacecafe'")
        }
        try queue.close()
    }

    @Test func aStoreFromANewerErrorbusdIsRefusedWithWhoWroteItAndTheWayBack() async throws {
        try await StoreTestDirectory.with { directory in
            let store = try JobStore(directory: directory, logger: StoreTestDirectory.logger(), version: "0.3.0+1.gabc")
            _ = try await store.enqueue([OutboxFile(id: "job-1", service: "sync", fileName: "a", path: "/o/a", size: 1)])
            try await store.close()
            try await Self.writeAsFuture(directory)

            let error = #expect(throws: StoreError.self) {
                try JobStore(directory: directory, logger: StoreTestDirectory.logger(), version: "0.3.0+1.gabc")
            }
            #expect(error?.isNewer == true && error?.isFatal == true)
            let text = error?.description ?? ""
            #expect(text.contains("errorbusd 9.0.0+2.gfeedfacecafe") && text.contains("\"99 jobs in parts\" (errorbusd 9.0.0)"))
            #expect(text.contains("errorbusd --downgrade-store 0.3.0+1.gabc") && !text.contains("\n"))
            // Asking what an older release needs, or turning it back, is for the newer errorbusd.
            #expect(throws: StoreError.self) { try JobStore.requirements(directory: directory, newerThan: "0.2.0") }
            #expect(throws: StoreError.self) { try JobStore.downgrade(directory: directory, to: "0.2.0", logger: StoreTestDirectory.logger()) }

            // Nothing was changed: the job is there, the writer is still the newer one.
            let queue = try DatabaseQueue(path: directory + "/" + JobStore.databaseFileName)
            let (jobs, writer) = try await queue.read { db in
                (try Int.fetchOne(db, sql: "SELECT count(*) FROM job"), try String.fetchOne(db, sql: "SELECT version FROM store_writer"))
            }
            #expect(jobs == 1 && writer == "9.0.0+2.gfeedfacecafe")
            try queue.close()
        }
    }

    @Test func aStoreIsTurnedBackOnlyForTheReleasesThatPredateWhatItCarries() async throws {
        try await StoreTestDirectory.with { directory in
            #expect(try JobStore.requirements(directory: directory, newerThan: "0.1.0") == [])
            let store = try JobStore(directory: directory, logger: StoreTestDirectory.logger(), version: "0.3.0")
            try await store.close()
            #expect(try JobStore.requirements(directory: directory, newerThan: "0.2.0") == ["13 parked jobs", "10 binary job keys"])
            #expect(try JobStore.requirements(directory: directory, newerThan: "0.2.9") == ["13 parked jobs", "10 binary job keys"])
            #expect(try JobStore.requirements(directory: directory, newerThan: "0.3.0") == ["13 parked jobs"])
            #expect(try JobStore.requirements(directory: directory, newerThan: "0.3.9+2.g0123456789ab") == ["13 parked jobs"])
            for release in ["0.4.0", "0.4.0+7.g0123456789ab", "0.4", "1.0.0"] {
                #expect(try JobStore.requirements(directory: directory, newerThan: release) == [], "\(release)")
                #expect(try JobStore.downgrade(directory: directory, to: release, logger: StoreTestDirectory.logger()) == [])
            }
            #expect(try JobStore.requirements(directory: directory, newerThan: "0.2.0") == ["13 parked jobs", "10 binary job keys"])
        }
    }

    @Test func aStoreInUseIsNotTurnedBackButCanBeAskedAbout() async throws {
        try await StoreTestDirectory.with { directory in
            let store = try JobStore(directory: directory, logger: StoreTestDirectory.logger())
            #expect(try JobStore.requirements(directory: directory, newerThan: "0.2.0") == ["13 parked jobs", "10 binary job keys"])
            let error = #expect(throws: StoreError.self) {
                try JobStore.downgrade(directory: directory, to: "0.2.0", logger: StoreTestDirectory.logger())
            }
            #expect(error?.isInUse == true)
            try await store.close()
        }
    }

    @Test func releasesCompareByTheirNumbersAndABuildCountsAsItsRelease() {
        #expect(ReleaseVersion("0.2.0") < ReleaseVersion("0.3.0"))
        #expect(ReleaseVersion("0.2.10") > ReleaseVersion("0.2.9"))
        #expect(ReleaseVersion("0.3.0+12.gabc") == ReleaseVersion("0.3.0"))
        #expect(ReleaseVersion("0.3") == ReleaseVersion("0.3.0"))
        #expect(ReleaseVersion(validating: "latest") == nil && ReleaseVersion(validating: "0.x") == nil)
        #expect(ReleaseVersion(validating: "0.3.0+4.g1a2b") != nil)
    }
}
