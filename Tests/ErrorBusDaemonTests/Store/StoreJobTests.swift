import ErrorBusDaemon
import ErrorBusStore
import Foundation
import Testing

@Suite struct StoreJobTests {
    @Test func enqueueInsertsQueuedJobsAndReturnsThemAsStored() async throws {
        try await StoreTestDirectory.withStore { store, _ in
            let new = StoreTestDirectory.newJobs(3)
            let result = try await store.enqueue(new)
            #expect(result.duplicates.isEmpty)
            #expect(result.inserted.map(\.id) == new.map(\.id))
            for (job, given) in zip(result.inserted, new) {
                #expect(job.state == .queued)
                #expect(job.service == "sync")
                #expect(job.fileName == given.fileName && job.path == given.path && job.size == given.size)
                #expect(job.attempts == 0 && job.lastError == nil && job.incident == nil && job.reason == nil)
                #expect(job.deliveredAt == nil && job.createdAt == job.updatedAt)
                #expect(try store.job(job.id) == job)
            }
            #expect(try store.job("unknown") == nil)
            #expect(try await store.enqueue([]) == EnqueueResult(inserted: [], duplicates: []))
        }
    }

    @Test func aKnownIdIsNotInsertedTwiceAndTheCallerLearnsWhatItIs() async throws {
        try await StoreTestDirectory.withStore { store, _ in
            let first = StoreTestDirectory.newJobs(2)
            _ = try await store.enqueue(first)
            try store.markDelivered([first[0].id])

            // The same contents dropped again under other names, plus one new file given twice.
            var again = first.map { job in
                var copy = job
                copy.fileName = "copy-" + job.fileName
                copy.path = "/var/spool/errorbusd/outbox/copy-" + job.fileName
                return copy
            }
            let fresh = OutboxFile(id: "fresh", service: "sync", fileName: "fresh.json", path: "/o/fresh.json", size: 1)
            again += [fresh, fresh]
            let result = try await store.enqueue(again)

            #expect(result.inserted.map(\.id) == ["fresh"])
            #expect(result.duplicates.map(\.new) == [again[0], again[1], fresh])
            #expect(result.duplicates.map(\.existing.state) == [.delivered, .queued, .queued])
            #expect(result.duplicates[0].existing.path == first[0].path)
            #expect(result.alreadyDelivered == [again[0]])
            #expect(try store.counts().total == 3)
        }
    }

    @Test func discardedContentArrivingAgainInAnotherFileOrRewrittenIsANewJob() async throws {
        try await StoreTestDirectory.withStore { store, _ in
            var heartbeat = OutboxFile(id: "hb", service: "sync", fileName: "hb.txt", path: "/o/hb.txt", size: 2)
            heartbeat.modifiedAt = Date(timeIntervalSinceNow: -60)
            _ = try await store.enqueue([heartbeat])
            #expect(try store.discardQueued("hb"))
            let discarded = try #require(try store.job("hb"))

            // The discarded file itself, found again (a rescan, a restart): still discarded.
            let rescan = try await store.enqueue([heartbeat])
            #expect(rescan.inserted.isEmpty && rescan.replacedDiscarded.isEmpty)
            #expect(rescan.duplicates.map(\.existing.state) == [.discarded])

            // The same bytes written to the same name after the discard: a new job.
            var rewritten = heartbeat
            rewritten.modifiedAt = discarded.updatedAt.addingTimeInterval(1)
            let again = try await store.enqueue([rewritten])
            #expect(again.inserted.map(\.id) == ["hb"])
            #expect(again.inserted.first?.state == .queued)
            #expect(again.replacedDiscarded.map(\.reason) == ["discarded by an operator"])
            #expect(try store.job("hb")?.state == .queued)
            #expect(try store.counts().discarded == 0)

            // Discarded again, then the same bytes in another file: a new job too.
            #expect(try store.discardQueued("hb"))
            let copy = OutboxFile(id: "hb", service: "sync", fileName: "hb2.txt", path: "/o/hb2.txt", size: 2)
            let other = try await store.enqueue([copy])
            #expect(other.inserted.map(\.fileName) == ["hb2.txt"])
            #expect(try store.job("hb")?.path == "/o/hb2.txt")
            #expect(try store.counts().total == 1)
        }
    }

    @Test func claimingTakesTheOldestQueuedJobsAndMarksThemInFlight() async throws {
        try await StoreTestDirectory.withStore { store, _ in
            // Several transactions within one millisecond: the order is the insertion order.
            for batch in 0..<2 { _ = try await store.enqueue(StoreTestDirectory.newJobs(4, prefix: "b\(batch)")) }
            try store.markInFlight("b0-1")
            try store.markDeadLettered("b0-3", reason: "bad", incident: 2)

            let first = try await store.claimQueued(limit: 3)
            #expect(first.map(\.id) == ["b0-0", "b0-2", "b1-0"])
            #expect(first.allSatisfy { $0.state == .inFlight })
            for job in first { #expect(try store.job(job.id) == job) }
            // What one claim took, the next does not take again.
            #expect(try await store.claimQueued(limit: 5).map(\.id) == ["b1-1", "b1-2", "b1-3"])
            #expect(try await store.claimQueued(limit: 5).isEmpty)
            #expect(try await store.claimQueued(limit: 0).isEmpty)

            // A job queued again is claimed again, in its old place.
            try store.markQueued("b1-2", lastError: "timeout")
            try store.markQueued("b0-0", lastError: "timeout")
            #expect(try await store.claimQueued(limit: 5).map(\.id) == ["b0-0", "b1-2"])
            // Six claimed, and b0-1, in flight before the first claim.
            #expect(try store.counts()[.inFlight] == 7)
        }
    }

    @Test func eachTransitionSetsItsFieldsAndOnlyFromTheStatesThatAllowIt() async throws {
        try await StoreTestDirectory.withStore { store, _ in
            _ = try await store.enqueue(StoreTestDirectory.newJobs(6))

            #expect(try store.markInFlight(["job-0", "job-1", "job-2", "missing"]) == 3)
            #expect(try store.markInFlight("job-0") == false)  // already in flight
            #expect(try store.job("job-0")?.state == .inFlight)

            #expect(try store.markQueued("job-0", lastError: "connection refused"))
            var job = try #require(try store.job("job-0"))
            #expect(job.state == .queued && job.incident == nil && job.attempts == 1 && job.lastError == "connection refused")

            #expect(try store.markDeadLettered("job-1", reason: "422: missing field", incident: 42))
            job = try #require(try store.job("job-1"))
            #expect(job.state == .deadLettered && job.reason == "422: missing field" && job.incident == 42 && job.attempts == 1)
            #expect(try store.markQueued("job-1", lastError: nil) == false)

            #expect(try store.markDelivered(["job-2", "job-2", "missing"]) == 1)
            job = try #require(try store.job("job-2"))
            #expect(job.state == .delivered && job.deliveredAt == job.updatedAt && job.deliveredAt != nil)
            // Final: nothing moves it again.
            #expect(try store.markQueued("job-2", lastError: "late") == false)
            #expect(try store.markDiscarded("job-2") == false)
            #expect(try store.markDeadLettered("job-2", reason: "late", incident: nil) == false)
            #expect(try store.markInFlight("job-2") == false)

            // Discarding keeps a dead letter's reason unless given another.
            #expect(try store.markDiscarded("job-1"))
            #expect(try store.job("job-1")?.reason == "422: missing field")
            #expect(try store.markDiscarded("job-3", reason: "operator: obsolete"))
            #expect(try store.job("job-3")?.reason == "operator: obsolete")
            #expect(try store.markDiscarded("job-3") == false)
            // …but delivery is a fact even after a discard.
            #expect(try store.markDelivered(["job-3"]) == 1)

            #expect(try store.markQueued("missing", lastError: nil) == false)
            #expect(try store.counts() == JobCounts([.queued: 3, .inFlight: 0, .delivered: 2, .discarded: 1]))
        }
    }

    @Test func countsAndPagesByServiceAndState() async throws {
        try await StoreTestDirectory.withStore { store, _ in
            _ = try await store.enqueue(StoreTestDirectory.newJobs(5))
            _ = try await store.enqueue([OutboxFile(id: "other", service: "loader", fileName: "x", path: "/x", size: 1)])
            try store.markInFlight(["job-1", "job-3"])

            let counts = try store.counts()
            #expect(counts.queued == 4 && counts.inFlight == 2 && counts.total == 6 && counts.pending == 6)
            #expect(try store.counts(service: "loader") == JobCounts([.queued: 1]))

            #expect(try store.jobs(offset: 0, limit: 4).map(\.id) == ["job-0", "job-1", "job-2", "job-3"])
            #expect(try store.jobs(offset: 4, limit: 4).map(\.id) == ["job-4", "other"])
            #expect(try store.jobs(service: "sync", state: .queued).map(\.id) == ["job-0", "job-2", "job-4"])
            #expect(try store.jobs(state: .inFlight, offset: 1, limit: 1).map(\.id) == ["job-3"])
            #expect(try store.jobs(service: "loader").map(\.id) == ["other"])
        }
    }

    @Test func jobsInFlightAtAStopAreQueuedAgainAtTheNextStart() async throws {
        try await StoreTestDirectory.with { directory in
            let store = try JobStore(directory: directory, logger: StoreTestDirectory.logger())
            _ = try await store.enqueue(StoreTestDirectory.newJobs(5))
            try store.markInFlight(["job-0", "job-1", "job-2"])
            try store.markDeadLettered("job-3", reason: "bad", incident: 10)
            try await store.close()

            let restarted = try JobStore(directory: directory, logger: StoreTestDirectory.logger())
            #expect(try restarted.requeueInterrupted() == 3)
            #expect(try restarted.counts() == JobCounts([.queued: 4, .deadLettered: 1]))
            #expect(try restarted.job("job-2")?.incident == nil)
            #expect(try restarted.job("job-3")?.incident == 10)
            #expect(try restarted.requeueInterrupted() == 0)
            try await restarted.close()
        }
    }

    @Test func knownFilesAreTheLatestJobOfEachNameThatMayStillHaveItsFile() async throws {
        try await StoreTestDirectory.withStore { store, _ in
            var jobs = StoreTestDirectory.newJobs(4)
            for index in jobs.indices { jobs[index].modifiedNanoseconds = 1_700_000_000_123_456_789 + Int64(index) }
            // job-3's file written again with other content: a second job of that name.
            var rewritten = jobs[3]
            rewritten.id = "job-3-again"
            rewritten.size = 7
            rewritten.modifiedNanoseconds = 1_700_000_001_000_000_000
            _ = try await store.enqueue(jobs + [rewritten])
            try store.markDelivered(["job-0"])
            #expect(try store.discardQueued("job-1"))
            try store.markDeadLettered("job-2", reason: "bad", incident: nil)

            let names = jobs.map(\.fileName) + ["never-queued.json"]
            let known = try store.knownFiles(service: "sync", named: names)
            // A delivered job's file is gone; a discarded or dead-lettered one's stays, and is
            // known: a rescan must not take it again.
            #expect(Set(known.keys) == ["job-1.json", "job-2.json", "job-3.json"])
            #expect(known["job-1.json"] == KnownFile(size: 101, modifiedNanoseconds: 1_700_000_000_123_456_790))
            #expect(known["job-3.json"] == KnownFile(size: 7, modifiedNanoseconds: 1_700_000_001_000_000_000))
            #expect(try store.knownFiles(service: "loader", named: names).isEmpty)
        }
    }

    @Test func aFileReadAgainGivesItsJobTheStampARescanLooksFor() async throws {
        try await StoreTestDirectory.withStore { store, _ in
            // A job recorded before the store kept stamps: read again once, then known by its stamp.
            let old = StoreTestDirectory.newJobs(1)
            _ = try await store.enqueue(old)
            #expect(try store.knownFiles(service: "sync", named: ["job-0.json"]) == ["job-0.json": KnownFile(size: 100, modifiedNanoseconds: nil)])
            var again = old[0]
            again.modifiedNanoseconds = 42
            let result = try await store.enqueue([again])
            #expect(result.inserted.isEmpty)
            #expect(try store.knownFiles(service: "sync", named: ["job-0.json"]) == ["job-0.json": KnownFile(size: 100, modifiedNanoseconds: 42)])
        }
    }

    @Test func pendingJobsWhoseFileIsGoneAreDiscardedAtReconciliation() async throws {
        try await StoreTestDirectory.withStore { store, _ in
            _ = try await store.enqueue(StoreTestDirectory.newJobs(5))
            try store.markDelivered(["job-0"])
            try store.markInFlight("job-1")
            try store.markDeadLettered("job-2", reason: "bad", incident: 2)

            var asked: [String] = []
            // Two jobs a page: the walk goes on past the pages with no missing file.
            let discarded = try store.reconcileFiles(page: 2) { job in
                asked.append(job.id)
                return job.id == "job-4"
            }
            // Delivered jobs are not looked at; every pending one is.
            #expect(asked == ["job-1", "job-2", "job-3", "job-4"])
            #expect(discarded.map(\.id) == ["job-1", "job-2", "job-3"])
            #expect(discarded.allSatisfy { $0.state == .discarded && $0.reason?.contains("file was gone") == true })
            #expect(try discarded.allSatisfy { try store.job($0.id) == $0 })
            #expect(try store.counts() == JobCounts([.delivered: 1, .discarded: 3, .queued: 1]))
        }
    }

    @Test func pruningDeletesOnlyFinishedJobsOlderThanTheDate() async throws {
        try await StoreTestDirectory.withStore { store, _ in
            _ = try await store.enqueue(StoreTestDirectory.newJobs(4))
            try store.markDelivered(["job-0"])
            try store.markDiscarded("job-1")
            try store.markDeadLettered("job-2", reason: "bad", incident: nil)

            #expect(try store.pruneFinished(before: Date().addingTimeInterval(-3_600)) == 0)
            #expect(try store.pruneFinished(before: Date().addingTimeInterval(1)) == 2)
            #expect(try store.counts() == JobCounts([.deadLettered: 1, .queued: 1]))
            // Pruned content is new again.
            #expect(try await store.enqueue(StoreTestDirectory.newJobs(1)).inserted.count == 1)
        }
    }
}
