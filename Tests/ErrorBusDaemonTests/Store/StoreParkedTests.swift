import ErrorBusDaemon
@testable import ErrorBusStore
import Foundation
import GRDB
import InMemoryLogging
import Logging
import Testing

/// A job an incident of the bus holds back is a `parked` row under the incident, and only a row:
/// parked from the queue or from a running upload, taken back one at a time in the incident's
/// order, released all at once, counted, listed and acted on by an operator like any pending
/// job, queued again by a restart, and turned back for an errorbusd that knows no such state.
@Suite struct StoreParkedTests {
    @Test func aJobIsParkedFromTheQueueOrARunningUploadUnderItsIncident() async throws {
        try await StoreTestDirectory.withStore { store, _ in
            _ = try await store.enqueue(StoreTestDirectory.newJobs(4))
            try store.markInFlight("job-1")

            #expect(try store.markParked("job-0", incident: 7, failed: false))
            #expect(try store.markParked("job-1", incident: 7, failed: true, runs: 2))
            var job = try #require(try store.job("job-1"))
            // Its uploads count among its attempts.
            #expect(job.state == .parked && job.incident == 7 && job.failedUnder && job.attempts == 2)
            job = try #require(try store.job("job-0"))
            #expect(job.state == .parked && job.incident == 7 && !job.failedUnder && job.attempts == 0)

            // Only from the queue or an upload: not parked again, not from a final state or the
            // dead letters.
            #expect(try store.markParked("job-0", incident: 8, failed: true) == false)
            #expect(try store.job("job-0")?.incident == 7)
            try store.markDelivered(["job-2"])
            try store.markDeadLettered("job-3", reason: "422", incident: 2)
            #expect(try store.markParked("job-2", incident: 7, failed: false) == false)
            #expect(try store.markParked("job-3", incident: 7, failed: false) == false)
            #expect(try store.markParked("missing", incident: 7, failed: false) == false)

            #expect(try store.jobs(state: .parked).map(\.id) == ["job-0", "job-1"])
            // Nothing claims a parked job but its incident.
            #expect(try await store.claimQueued(limit: 10).isEmpty)
            #expect(try store.markInFlight("job-0") == false)
        }
    }

    @Test func anIncidentTakesBackThoseThatMerelyWaitThenThoseThatFailedEachOldestFirst() async throws {
        try await StoreTestDirectory.withStore { store, _ in
            _ = try await store.enqueue(StoreTestDirectory.newJobs(6))
            for (id, incident, failed) in [("job-0", 7, true), ("job-1", 7, false), ("job-2", 8, false), ("job-3", 7, true), ("job-4", 7, false)] {
                #expect(try store.markParked(id, incident: UInt64(incident), failed: failed))
            }

            let first = try #require(try store.takeParked(under: 7))
            #expect(first.id == "job-1" && first.state == .inFlight && first.incident == nil && !first.failedUnder)
            #expect(try store.job("job-1") == first)
            #expect(try store.takeParked(under: 7)?.id == "job-4")
            // Then those that failed: they keep saying so while they run.
            let failed = try #require(try store.takeParked(under: 7))
            #expect(failed.id == "job-0" && failed.state == .inFlight && failed.incident == nil && failed.failedUnder)
            #expect(try store.job("job-0") == failed)
            // A probe that fails again is parked again, behind those that merely wait.
            #expect(try store.markParked("job-1", incident: 7, failed: true))
            #expect(try store.markParked("job-5", incident: 7, failed: false))
            #expect(try store.takeParked(under: 7)?.id == "job-5")
            #expect(try store.takeParked(under: 7)?.id == "job-1")
            #expect(try store.takeParked(under: 7)?.id == "job-3")
            #expect(try store.takeParked(under: 7) == nil)
            #expect(try store.takeParked(under: 99) == nil)
            // Incident 8's job stayed where it was.
            #expect(try store.job("job-2")?.state == .parked)
            // Its outcome recorded, a job no longer says it failed under an incident.
            try store.markQueued("job-0", lastError: "503")
            let queued = try #require(try store.job("job-0"))
            #expect(queued.state == .queued && !queued.failedUnder && queued.attempts == 1)
        }
    }

    /// An incident holds the uploads back: the queue is parked under it, oldest first, a chunk at
    /// a time, as jobs that merely wait; the jobs under way and set aside stay where they are.
    @Test func aHeldBackQueueIsParkedUnderItsIncidentInChunks() async throws {
        try await StoreTestDirectory.withStore { store, _ in
            _ = try await store.enqueue(StoreTestDirectory.newJobs(6))
            try store.markInFlight(["job-1"])
            try store.markDeadLettered("job-5", reason: "422", incident: 3)
            // Paced before the incident held the scope: its back-off is the release's now.
            try store.markQueued("job-3", lastError: "paced", retryAt: Date().addingTimeInterval(3600))

            #expect(try await store.parkQueued(under: 7, limit: 2) == 2)
            #expect(try store.parkedJobs(under: 7, limit: 10).map(\.id) == ["job-0", "job-2"])
            #expect(try await store.parkQueued(under: 7, limit: 2) == 2)
            #expect(try await store.parkQueued(under: 7, limit: 2) == 0)
            #expect(try store.counts() == JobCounts([.inFlight: 1, .parked: 4, .deadLettered: 1]))
            for id in ["job-0", "job-2", "job-3", "job-4"] {
                let job = try #require(try store.job(id))
                #expect(job.incident == 7 && !job.failedUnder, "\(id)")
            }
            #expect(try store.job("job-5")?.incident == 3)
            // Released, they are claimed at once (the paced one too), in their places.
            #expect(try await store.releaseParked(7) == 4)
            #expect(try await store.claimQueued(limit: 10).map(\.id) == ["job-0", "job-2", "job-3", "job-4"])
        }
    }

    /// New jobs taken in while an incident holds the uploads back are parked under it as they
    /// are written, counted under it, and released with the rest.
    @Test func newJobsAreParkedUnderTheIncidentThatHoldsThemBack() async throws {
        try await StoreTestDirectory.withStore { store, _ in
            _ = try await store.enqueue(StoreTestDirectory.newJobs(1))
            let result = try await store.enqueue(Array(StoreTestDirectory.newJobs(3).dropFirst()), parkedUnder: 7)
            #expect(result.inserted.map(\.state) == [.parked, .parked] && result.inserted.allSatisfy { $0.incident == 7 })
            #expect(try store.counts() == JobCounts([.queued: 1, .parked: 2]))
            #expect(try store.parkedCounts() == [7: 2])
            let taken = try #require(try store.takeParked(under: 7))
            #expect(taken.id == "job-1" && !taken.failedUnder)
            #expect(try await store.releaseParked(7) == 1)
            #expect(try await store.claimQueued(limit: 10).map(\.id) == ["job-0", "job-2"])
        }
    }

    @Test func releasingAnIncidentQueuesItsJobsInTheirPlaces() async throws {
        try await StoreTestDirectory.withStore { store, _ in
            _ = try await store.enqueue(StoreTestDirectory.newJobs(6))
            try store.markInFlight(["job-0", "job-4"])
            try store.markParked("job-0", incident: 7, failed: true)
            try store.markParked("job-2", incident: 7, failed: false)
            try store.markParked("job-4", incident: 7, failed: true)
            try store.markParked("job-3", incident: 8, failed: false)
            #expect(try store.parkedCounts() == [7: 3, 8: 1])

            #expect(try await store.releaseParked(7, limit: 2) == 2)
            #expect(try await store.releaseParked(7, limit: 2) == 1)
            for id in ["job-0", "job-2", "job-4"] {
                let job = try #require(try store.job(id))
                #expect(job.state == .queued && job.incident == nil && !job.failedUnder && job.attempts == 0, "\(id)")
            }
            #expect(try await store.releaseParked(7) == 0)
            #expect(try store.parkedCounts() == [8: 1])
            // In their places: the oldest first, among the jobs that were never parked.
            #expect(try await store.claimQueued(limit: 10).map(\.id) == ["job-0", "job-1", "job-2", "job-4", "job-5"])
            #expect(try store.job("job-3")?.state == .parked)
            #expect(try store.counts() == JobCounts([.inFlight: 5, .parked: 1]))
        }
    }

    /// At an incident's release, the jobs that failed under it go behind those that merely
    /// waited: not claimed before the moment given.
    @Test func releasedJobsThatFailedUnderTheIncidentWaitBehindTheOthers() async throws {
        try await StoreTestDirectory.withStore { store, _ in
            _ = try await store.enqueue(StoreTestDirectory.newJobs(3))
            try store.markInFlight(["job-0"])
            try store.markParked("job-0", incident: 7, failed: true)
            try store.markParked("job-1", incident: 7, failed: false)
            #expect(try await store.releaseParked(7, failedBackOff: .seconds(3600)) == 2)
            #expect(try await store.claimQueued(limit: 10).map(\.id) == ["job-1", "job-2"])
            #expect(try store.job("job-0")?.state == .queued)
        }
    }

    @Test func parkedJobsArePendingInTheCountsAndTheBacklog() async throws {
        try await StoreTestDirectory.withStore { store, directory in
            _ = try await store.enqueue(StoreTestDirectory.newJobs(4))
            try store.markInFlight("job-1")
            try store.markParked("job-0", incident: 7, failed: false)
            try store.markParked("job-1", incident: 7, failed: true)
            try store.markDelivered(["job-3"])

            let counts = try store.counts()
            #expect(counts == JobCounts([.queued: 1, .parked: 2, .delivered: 1]))
            #expect(counts.parked == 2 && counts.pending == 3 && counts.total == 4)
            #expect(try store.counts(service: "sync") == StoreCountTests.counted(in: directory, service: "sync"))
            #expect(try StoreCountTests.kept(in: directory, service: "sync") == counts)
            #expect(try store.pendingCounts() == ["sync": JobCounts([.queued: 1, .parked: 2])])
            // Sizes 100, 101 and 102: the parked jobs' bytes are the backlog's, as queued ones' are.
            let backlog = try store.backlog()
            #expect(backlog.jobs == 3 && backlog.bytes == 100 + 101 + 102)
            #expect(backlog.oldest == (try store.job("job-0"))?.createdAt)
            #expect(try store.backlog(service: "sync") == backlog)
            // Beyond the limits the parked jobs go first, oldest first, then the queued ones.
            let dropped = try store.dropOldestQueued(maxBytes: nil, maxJobs: 2, reason: "backlog full")
            #expect(dropped.map(\.id) == ["job-0"])
            #expect(try store.counts() == JobCounts([.queued: 1, .parked: 1, .delivered: 1, .deadLettered: 1]))
        }
    }

    @Test func anOperatorRetriesDiscardsOrDeadLettersAParkedJob() async throws {
        let logs = InMemoryLogHandler()
        try await StoreTestDirectory.withStore(logs: logs) { store, _ in
            _ = try await store.enqueue(StoreTestDirectory.newJobs(7))
            for (index, id) in ["job-0", "job-1", "job-2", "job-3", "job-4", "job-5"].enumerated() {
                try store.markParked(id, incident: index < 4 ? 7 : 8, failed: index % 2 == 1)
            }

            #expect(try store.retryParked("job-0"))
            var job = try #require(try store.job("job-0"))
            #expect(job.state == .queued && job.incident == nil && !job.failedUnder && job.attempts == 0)
            #expect(try store.retryParked("job-0") == false)
            #expect(try store.retryParked("job-6") == false)

            #expect(try store.markDiscarded("job-1", reason: "operator: obsolete"))
            job = try #require(try store.job("job-1"))
            #expect(job.state == .discarded && job.reason == "operator: obsolete" && job.incident == 7 && !job.failedUnder)

            #expect(try store.markDeadLettered("job-2", reason: "operator: set aside", incident: 9, attempts: 0))
            job = try #require(try store.job("job-2"))
            #expect(job.state == .deadLettered && job.incident == 9 && job.attempts == 0 && !job.failedUnder)
            #expect(try store.deadLetters(incident: 9).map(\.id) == ["job-2"])

            // An outcome the bus records for a parked job: a failed attempt, a delivery.
            #expect(try store.markQueued("job-3", lastError: "503"))
            job = try #require(try store.job("job-3"))
            #expect(job.state == .queued && job.incident == nil && !job.failedUnder && job.attempts == 1)
            #expect(try store.markParked("job-3", incident: 7, failed: true))
            #expect(try store.markDelivered(["job-3"]) == 1)
            #expect(try store.job("job-3")?.failedUnder == false)
            #expect(try store.markIsolated("job-4", ownFailures: 2))

            // An incident's jobs given up at once; they keep the incident they waited on.
            #expect(try store.discardParked(8, reason: "discarded by an operator") == 2)
            #expect(try store.discardParked(8, reason: "discarded by an operator") == 0)
            for id in ["job-4", "job-5"] {
                let job = try #require(try store.job(id))
                #expect(job.state == .discarded && job.incident == 8 && job.reason == "discarded by an operator" && !job.failedUnder, "\(id)")
            }
            #expect(try store.job("job-4")?.ownFailures == 2)
            #expect(logs.entries.contains { "\($0.message)" == "Parked jobs discarded" && $0.metadata["count"] == "2" && $0.metadata["incident"] == "8" })
            #expect(try store.parkedCounts() == [:])
            #expect(try store.counts() == JobCounts([.queued: 2, .delivered: 1, .deadLettered: 1, .discarded: 3]))
        }
    }

    /// An operator cancels one parked job: discarded, with its incident; a job in any other
    /// state is not cancelled.
    @Test func oneParkedJobIsCancelledAlone() async throws {
        try await StoreTestDirectory.withStore { store, _ in
            _ = try await store.enqueue(StoreTestDirectory.newJobs(3))
            try store.markParked("job-0", incident: 7, failed: false)
            try store.markParked("job-1", incident: 7, failed: true)
            #expect(try store.discardParked(job: "job-1"))
            let job = try #require(try store.job("job-1"))
            #expect(job.state == .discarded && job.incident == 7 && job.reason == "discarded by an operator" && !job.failedUnder)
            #expect(try !store.discardParked(job: "job-1"))
            #expect(try !store.discardParked(job: "job-2"))
            #expect(try store.counts() == JobCounts([.queued: 1, .parked: 1, .discarded: 1]))
        }
    }

    @Test func aFileWrittenAgainOrGoneGivesUpItsParkedJob() async throws {
        try await StoreTestDirectory.withStore { store, _ in
            let old = OutboxFile(id: "old", service: "sync", fileName: "a.json", path: "/o/a.json", size: 1)
            let gone = OutboxFile(id: "gone", service: "sync", fileName: "b.json", path: "/o/b.json", size: 1)
            _ = try await store.enqueue([old, gone])
            try store.markParked("old", incident: 7, failed: false)
            try store.markParked("gone", incident: 7, failed: true)

            let superseded = try store.supersede(path: "/o/a.json", service: "sync", by: "new", reason: "written again")
            #expect(superseded.discarded.map(\.id) == ["old"] && superseded.inFlight.isEmpty)
            let stored = try #require(try store.job("old"))
            #expect(stored.state == .discarded && stored.reason == "written again" && stored.incident == 7)

            let discarded = try store.reconcileFiles { $0.id != "gone" }
            #expect(discarded.map(\.id) == ["gone"] && discarded.first?.failedUnder == false)
            #expect(discarded.first == (try store.job("gone")))
        }
    }

    /// The bus's incidents end with errorbusd: a restart queues the uploads that were under way
    /// at once, and leaves the parked jobs, however many, for sync to release a chunk at a time
    /// (by their incident, which the store still counts), each then in its place.
    @Test func aRestartQueuesTheUploadsUnderWayAndLeavesTheParkedJobsToRelease() async throws {
        try await StoreTestDirectory.with { directory in
            let store = try JobStore(directory: directory, logger: StoreTestDirectory.logger())
            _ = try await store.enqueue(StoreTestDirectory.newJobs(5))
            try store.markInFlight(["job-0", "job-1", "job-4"])
            try store.markParked("job-1", incident: 7, failed: true)
            try store.markParked("job-2", incident: 8, failed: false)
            try store.markDeadLettered("job-3", reason: "422", incident: 7)
            try await store.close()

            let restarted = try JobStore(directory: directory, logger: StoreTestDirectory.logger())
            #expect(try restarted.requeueInterrupted() == 2)
            #expect(try restarted.parkedCounts() == [7: 1, 8: 1])
            for incident in try restarted.parkedCounts().keys {
                #expect(try await restarted.releaseParked(incident, limit: 1) == 1)
            }
            for id in ["job-0", "job-1", "job-2", "job-4"] {
                let job = try #require(try restarted.job(id))
                #expect(job.state == .queued && job.incident == nil && !job.failedUnder, "\(id)")
            }
            #expect(try restarted.job("job-3")?.incident == 7)
            #expect(try await restarted.claimQueued(limit: 10).map(\.id) == ["job-0", "job-1", "job-2", "job-4"])
            try await restarted.close()
        }
    }

    /// What SQLite does for each statement on the parked jobs: a walk of `job_parked` (of its
    /// entries under one incident, in the order taken, with no sort), never of the table or of
    /// `job_state`, which holds every job of a state; the counts read the rows triggers keep.
    @Test func theStatementsOnParkedJobsWalkTheirIndex() async throws {
        try await StoreTestDirectory.withStore { store, _ in
            _ = try await store.enqueue(StoreTestDirectory.newJobs(20))
            for index in 0..<10 { try store.markParked("job-\(index)", incident: UInt64(index % 3), failed: index % 2 == 0) }
            let statements: [(sql: String, arguments: StatementArguments)] = [
                (JobStore.takeParkedSQL, [1]),
                (JobStore.releaseParkedSQL, [nil, 0, 1, 10]),
                (JobStore.parkQueuedSQL, [1, 0, 10]),
                (JobStore.parkedCountsSQL, []),
            ]
            let plans = try await store.pool.read { db in
                try statements.map { statement in
                    try Row.fetchAll(db, sql: "EXPLAIN QUERY PLAN " + statement.sql, arguments: statement.arguments).map { $0["detail"] as String }
                }
            }
            let (take, release, park, count) = (plans[0], plans[1], plans[2], plans[3])
            #expect(take.count == 1 && take[0].contains("INDEX job_parked (state=? AND incident=?)"), "\(take)")
            // The release's subquery walks the parked jobs of one incident, its update each by its key.
            #expect(release.contains { $0.contains("INDEX job_parked (state=? AND incident=?)") }, "\(release)")
            // The counts, from the rows the triggers keep.
            #expect(count.count == 1 && count[0].contains("parked_count"), "\(count)")
            #expect(!(take + release + count).contains { $0.contains("TEMP B-TREE") || $0.contains("job_state") || $0.contains("SCAN job") })
            // Parking the queue walks the queued jobs in `job_state`, oldest first, with no sort.
            #expect(park.contains { $0.contains("INDEX job_state (state=?)") } && !park.contains { $0.contains("TEMP B-TREE") || $0.contains("SCAN job") }, "\(park)")
        }
    }

    /// A store of migration 12 with work under way: parked jobs are recorded once it is migrated;
    /// turned back for 0.3.0, which knows no `parked`, they are queued as a restart queues them,
    /// the dead letters keeping their incident and the counts the jobs; opened again, the
    /// migration runs again on the column and index it left, and jobs are parked again.
    @Test func parkedJobsAreQueuedWhenTheStoreIsTurnedBackFor030() async throws {
        try await StoreTestDirectory.with { directory in
            let path = directory + "/" + JobStore.databaseFileName
            let queue = try DatabaseQueue(path: path)
            try StoreSchema.migrator.migrate(queue, upTo: "12 store format")
            try await queue.write { db in
                for (index, state) in ["queued", "inFlight", "queued", "deadLettered"].enumerated() {
                    try db.execute(
                        sql: "INSERT INTO job (id, service, fileName, path, size, state, incident, createdAt, updatedAt) VALUES (?, 'sync', ?, ?, 10, ?, ?, 1, 1)",
                        arguments: ["job-\(index)", "f\(index)", "/o/f\(index)", state, state == "deadLettered" ? 3 : nil]
                    )
                }
            }
            try queue.close()

            let store = try JobStore(directory: directory, logger: StoreTestDirectory.logger())
            #expect(try store.markParked("job-0", incident: 7, failed: false))
            #expect(try store.markParked("job-1", incident: 7, failed: true))
            #expect(try store.markParked("job-2", incident: 8, failed: false))
            #expect(try store.takeParked(under: 8)?.id == "job-2")
            #expect(try store.counts() == JobCounts([.inFlight: 1, .parked: 2, .deadLettered: 1]))
            try await store.close()

            #expect(try JobStore.requirements(directory: directory, newerThan: "0.3.0") == ["13 parked jobs"])
            #expect(try JobStore.downgrade(directory: directory, to: "0.3.0", logger: StoreTestDirectory.logger()) == ["13 parked jobs"])
            #expect(try JobStore.requirements(directory: directory, newerThan: "0.3.0") == [])
            #expect(try JobStore.requirements(directory: directory, newerThan: "0.2.0") == ["10 binary job keys"])
            let undo = try DatabaseQueue(path: path)
            let (rows, migrations, counts, format) = try await undo.read { db in
                (
                    try Row.fetchAll(db, sql: "SELECT id, state, incident, failedUnder FROM job ORDER BY seq").map { row in
                        "\(row["id"] as String) \(row["state"] as String) \((row["incident"] as Int?).map(String.init) ?? "-") \(row["failedUnder"] as Int)"
                    },
                    try StoreSchema.migrator.appliedIdentifiers(db),
                    try Row.fetchAll(db, sql: "SELECT state, count FROM job_count WHERE count > 0 ORDER BY state").map { "\($0[0] as String)=\($0[1] as Int)" },
                    try String.fetchAll(db, sql: "SELECT migration FROM store_format ORDER BY migration")
                )
            }
            #expect(rows == ["job-0 queued - 0", "job-1 queued - 0", "job-2 inFlight - 0", "job-3 deadLettered 3 0"])
            #expect(!migrations.contains("13 parked jobs") && migrations.contains("12 store format"))
            #expect(counts == ["deadLettered=1", "inFlight=1", "queued=2"])
            #expect(format == ["10 binary job keys"])
            try undo.close()

            let again = try JobStore(directory: directory, logger: StoreTestDirectory.logger())
            #expect(try again.requeueInterrupted() == 1)
            #expect(try again.markParked("job-2", incident: 9, failed: true))
            #expect(try again.takeParked(under: 9)?.id == "job-2")
            #expect(try again.checkIntegrity() == ["ok"])
            try await again.close()
            #expect(try JobStore.requirements(directory: directory, newerThan: "0.3.0") == ["13 parked jobs"])
        }
    }
}
