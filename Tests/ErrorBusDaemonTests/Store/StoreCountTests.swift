import ErrorBusDaemon
@testable import ErrorBusStore
import Foundation
import GRDB
import Testing

/// The counts status displays read come from `job_count`, kept by triggers; these tests hold
/// them against a count of the jobs themselves.
@Suite struct StoreCountTests {
    /// `SELECT state, COUNT(*) FROM job`: what the counts must say.
    static func counted(in directory: String, service: String) throws -> JobCounts {
        try states(in: directory, sql: "SELECT state, COUNT(*) FROM job WHERE service = ? GROUP BY state", service)
    }

    /// The `job_count` rows the triggers keep, read directly, whatever `counts()` reads.
    static func kept(in directory: String, service: String) throws -> JobCounts {
        try states(in: directory, sql: "SELECT state, count FROM job_count WHERE service = ?", service)
    }

    private static func states(in directory: String, sql: String, _ service: String) throws -> JobCounts {
        let queue = try DatabaseQueue(path: directory + "/" + JobStore.databaseFileName, configuration: readOnly)
        return try queue.read { db in
            var counts = JobCounts()
            for row in try Row.fetchAll(db, sql: sql, arguments: [service]) { counts[JobState(rawValue: row[0])!] = row[1] }
            return counts
        }
    }

    static var readOnly: Configuration {
        var configuration = Configuration()
        configuration.readonly = true
        return configuration
    }

    @Test func countsFollowEveryKindOfChange() async throws {
        try await StoreTestDirectory.withStore { store, directory in
            func check(_ step: String) throws {
                let pending = try store.pendingCounts()
                for service in ["sync", "loader"] {
                    let counted = try Self.counted(in: directory, service: service)
                    #expect(try Self.kept(in: directory, service: service) == counted, "\(service) after \(step)")
                    #expect(try store.counts(service: service) == counted, "\(service) after \(step)")
                    for state in JobState.allCases where !state.isFinal {
                        #expect(pending[service, default: JobCounts()][state] == counted[state], "\(service) \(state) after \(step)")
                    }
                }
                // And the jobs parked under each incident (`parked_count`).
                let parked = try DatabaseQueue(path: directory + "/" + JobStore.databaseFileName, configuration: Self.readOnly).read { db in
                    try Row.fetchAll(db, sql: "SELECT incident, COUNT(*) FROM job WHERE state = 'parked' AND incident IS NOT NULL GROUP BY incident")
                        .reduce(into: [UInt64: Int]()) { $0[$1[0]] = $1[1] }
                }
                #expect(try store.parkedCounts() == parked, "parked after \(step)")
            }

            _ = try await store.enqueue(StoreTestDirectory.newJobs(8))
            _ = try await store.enqueue(StoreTestDirectory.newJobs(2) + [OutboxFile(id: "l", service: "loader", fileName: "l", path: "/l", size: 1)])
            try check("enqueue, with duplicates ignored")
            try store.markInFlight(["job-0", "job-1", "job-2", "job-3", "job-4"])
            try check("markInFlight")
            try store.markQueued("job-1", lastError: "503")
            try store.markDelivered(["job-2", "job-5"])
            try check("markQueued, markDelivered")
            try store.markDeadLettered("job-3", reason: "422", incident: 3)
            try store.markDeadLettered("job-6", reason: "422", incident: 3)
            try store.markDiscarded("job-7")
            try check("markDeadLettered, markDiscarded")
            try store.retryDeadLetter("job-3")
            _ = try store.discardDeadLetters()
            try check("retry and discard dead letters")
            try store.markParked("job-0", incident: 5, failed: true)
            try store.markParked("job-1", incident: 5, failed: false)
            try store.markParked("job-3", incident: 6, failed: false)
            try store.markParked("l", incident: 6, failed: false)
            try store.markParked("job-4", incident: 7, failed: true)
            try check("markParked")
            _ = try store.takeParked(under: 5)
            #expect(try await store.releaseParked(6) == 2)
            #expect(try await store.parkQueued(under: 8, limit: 1) == 1)
            #expect(try store.discardParked(7, reason: "discarded by an operator") == 1)
            try check("takeParked, releaseParked, parkQueued, discardParked")
            #expect(try store.requeueInterrupted() == 1)
            try check("requeueInterrupted")
            #expect(try store.pruneFinished(before: Date().addingTimeInterval(60)) == 5)
            try check("pruneFinished")
            // The parked jobs stay parked, for sync to release.
            #expect(try store.counts() == JobCounts([.queued: 2, .parked: 2]))
        }
    }

    @Test func aStoreFromBeforeTheCountsStartsFromItsJobs() async throws {
        try await StoreTestDirectory.with { directory in
            // A database as errorbusd left it before migration "4 job counts", with jobs in it.
            let queue = try DatabaseQueue(path: directory + "/" + JobStore.databaseFileName)
            try StoreSchema.migrator.migrate(queue, upTo: "3 resources")
            try await queue.write { db in
                for (index, state) in ["queued", "queued", "parked", "delivered", "deadLettered"].enumerated() {
                    try db.execute(
                        sql: """
                            INSERT INTO job (id, service, fileName, path, size, state, createdAt, updatedAt)
                            VALUES (?, 'sync', 'f', '/f', 1, ?, 0, 0)
                            """,
                        arguments: ["old-\(index)", state]
                    )
                }
            }
            try queue.close()

            let store = try JobStore(directory: directory, logger: StoreTestDirectory.logger())
            // `parked`, which earlier builds recorded for jobs the bus held, is counted again since
            // `13 parked jobs`; the start queues such jobs of no incident again.
            #expect(try store.counts() == JobCounts([.queued: 2, .parked: 1, .delivered: 1, .deadLettered: 1]))
            #expect(try store.requeueInterrupted() == 1)
            try store.markInFlight("old-0")
            #expect(try store.pendingCounts()["sync"] == JobCounts([.queued: 2, .inFlight: 1, .deadLettered: 1]))
            try await store.close()
        }
    }
}
