import ErrorBusDaemon
@testable import ErrorBusStore
import ErrorBusSupport
import ErrorBusTesting
import Foundation
import GRDB
import Testing

/// The backlog's size and age, the dead letters' retention and the oldest queued jobs dropped for
/// room: what the limits of `sync.backlog` and `sync.dead-letters` rest on.
@Suite struct StoreLimitTests {
    /// The backlog as a walk of the jobs themselves says it is.
    static func walked(in directory: String) throws -> (jobs: Int, bytes: Int64) {
        let queue = try DatabaseQueue(path: directory + "/" + JobStore.databaseFileName, configuration: StoreCountTests.readOnly)
        return try queue.read { db in
            let row = try Row.fetchOne(db, sql: "SELECT COUNT(*), COALESCE(SUM(size), 0) FROM job WHERE state IN ('queued', 'inFlight')")
            return (row?[0] ?? 0, row?[1] ?? 0)
        }
    }

    @Test func theBacklogsBytesFollowEveryChangeOfState() async throws {
        try await StoreTestDirectory.withStore { store, directory in
            func check(_ step: String) throws {
                let backlog = try store.backlog()
                let walked = try Self.walked(in: directory)
                #expect(backlog.jobs == walked.jobs && backlog.bytes == walked.bytes, "after \(step): \(backlog) against \(walked)")
            }
            #expect(try store.backlog() == JobStore.Backlog())
            // Sizes 100…109.
            _ = try await store.enqueue(StoreTestDirectory.newJobs(10))
            try check("enqueue")
            #expect(try store.backlog().bytes == (100..<110).reduce(0, +))
            try store.markInFlight(["job-0", "job-1", "job-2"])
            try store.markDelivered(["job-0"])
            try store.markDeadLettered("job-1", reason: "422", incident: nil)
            try store.markDiscarded("job-3")
            try check("in flight, delivered, dead-lettered, discarded")
            try store.retryDeadLetter("job-1")
            _ = try store.requeueInterrupted()
            try check("retried and requeued")
            #expect(try store.backlog().jobs == 8)
        }
    }

    @Test func theOldestJobWaitingIsTheFirstQueuedOrInFlight() async throws {
        let clock = ManualClock()
        try await StoreTestDirectory.withStore(clock: WallClock(clock)) { store, _ in
            _ = try await store.enqueue(StoreTestDirectory.newJobs(1, prefix: "first"))
            let first = try #require(try store.job("first-0")).createdAt
            clock.advance(by: .milliseconds(5))
            _ = try await store.enqueue(StoreTestDirectory.newJobs(2, prefix: "later"))
            #expect(try store.backlog().oldest == first)
            // In flight (uploading, or held by the bus) still waits for delivery.
            try store.markInFlight("first-0")
            #expect(try store.backlog().oldest == first)
            try store.markDelivered(["first-0"])
            #expect(try store.backlog().oldest == (try #require(try store.job("later-0"))).createdAt)
            try store.markDelivered(["later-0", "later-1"])
            #expect(try store.backlog().oldest == nil)
        }
    }

    @Test func deadLettersBeyondTheCountArePrunedOldestSetAsideFirst() async throws {
        let clock = ManualClock()
        try await StoreTestDirectory.withStore(clock: WallClock(clock)) { store, _ in
            _ = try await store.enqueue(StoreTestDirectory.newJobs(5))
            // Set aside in another order than they were queued: the retention goes by when.
            for id in ["job-3", "job-1", "job-4", "job-0", "job-2"] {
                try store.markDeadLettered(id, reason: "422", incident: nil)
                clock.advance(by: .milliseconds(3))
            }
            let prune = try store.pruneDeadLetters(keeping: 2, before: nil)
            #expect(prune.overCount.map(\.id) == ["job-3", "job-1", "job-4"])
            #expect(prune.tooOld.isEmpty)
            #expect(prune.overCount.allSatisfy { $0.state == .discarded && $0.reason?.contains("sync.dead-letters.max-count (2)") == true })
            #expect(try store.deadLetters().map(\.id) == ["job-0", "job-2"])
            #expect(try store.job("job-3")?.state == .discarded)
            #expect(try store.pruneDeadLetters(keeping: 2, before: nil).isEmpty)
        }
    }

    @Test func deadLettersNeverSentAreNeverPruned() async throws {
        try await StoreTestDirectory.withStore { store, _ in
            _ = try await store.enqueue(StoreTestDirectory.newJobs(4))
            // Set aside for room before any upload (no attempt), and rejected uploads.
            try store.markDeadLettered("job-0", reason: "dropped for room", incident: nil, attempts: 0)
            try store.markDeadLettered("job-1", reason: "422", incident: nil)
            try store.markDeadLettered("job-2", reason: "dropped for room", incident: nil, attempts: 0)
            try store.markDeadLettered("job-3", reason: "422", incident: nil)
            let prune = try store.pruneDeadLetters(keeping: 1, before: Date().addingTimeInterval(3_600))
            #expect(Set(prune.all.map(\.id)) == ["job-1", "job-3"])
            #expect(try store.deadLetters().map(\.id) == ["job-0", "job-2"])
            #expect(try store.deadLetters().map(\.attempts) == [0, 0])
        }
    }

    @Test func deadLettersOlderThanTheAgeArePruned() async throws {
        let clock = ManualClock()
        let dates = WallClock(clock)
        try await StoreTestDirectory.withStore(clock: dates) { store, _ in
            _ = try await store.enqueue(StoreTestDirectory.newJobs(3))
            try store.markDeadLettered("job-0", reason: "422", incident: nil)
            try store.markDeadLettered("job-1", reason: "422", incident: nil)
            clock.advance(by: .milliseconds(5))
            let cut = dates.now()
            clock.advance(by: .milliseconds(5))
            try store.markDeadLettered("job-2", reason: "422", incident: nil)
            let prune = try store.pruneDeadLetters(keeping: 100, before: cut)
            #expect(prune.tooOld.map(\.id) == ["job-0", "job-1"])
            #expect(prune.tooOld.allSatisfy { $0.reason?.contains("sync.dead-letters.max-age") == true })
            #expect(try store.deadLetters().map(\.id) == ["job-2"])
        }
    }

    @Test func droppingForRoomSetsAsideTheOldestQueuedJobsOnly() async throws {
        try await StoreTestDirectory.withStore { store, _ in
            // Sizes 100…105; job-0 is in flight (the bus runs or holds it) and stays.
            _ = try await store.enqueue(StoreTestDirectory.newJobs(6))
            try store.markInFlight("job-0")
            let dropped = try store.dropOldestQueued(maxBytes: nil, maxJobs: 4, reason: "dropped for room")
            #expect(dropped.map(\.id) == ["job-1", "job-2"])
            #expect(try store.deadLetters().map(\.reason) == ["dropped for room", "dropped for room"])
            #expect(try store.backlog().jobs == 4)
            // By bytes: 100 + 103 + 104 + 105 = 412 waiting; at most 300 leaves job-0 and job-5.
            let byBytes = try store.dropOldestQueued(maxBytes: 300, maxJobs: nil, reason: "dropped for room")
            #expect(byBytes.map(\.id) == ["job-3", "job-4"])
            #expect(try store.backlog().bytes == 205)
            #expect(try store.dropOldestQueued(maxBytes: 300, maxJobs: 4, reason: "x").isEmpty)
        }
    }

    @Test func aStoreFromBeforeTheBytesStartsFromItsJobs() async throws {
        try await StoreTestDirectory.with { directory in
            let queue = try DatabaseQueue(path: directory + "/" + JobStore.databaseFileName)
            try StoreSchema.migrator.migrate(queue, upTo: "4 job counts")
            try await queue.write { db in
                for (index, state) in ["queued", "inFlight", "delivered", "deadLettered"].enumerated() {
                    try db.execute(
                        sql: "INSERT INTO job (id, service, fileName, path, size, state, createdAt, updatedAt) VALUES (?, 'sync', 'f', '/f', ?, ?, 0, 0)",
                        arguments: ["old-\(index)", 1000 * (index + 1), state]
                    )
                }
            }
            try queue.close()
            let store = try JobStore(directory: directory, logger: StoreTestDirectory.logger())
            #expect(try store.backlog().bytes == 3000)
            try store.markDelivered(["old-1"])
            #expect(try store.backlog().bytes == 1000)
            try await store.close()
        }
    }
}
