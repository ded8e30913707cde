import ErrorBusDaemon
import ErrorBusStore
import Testing

@Suite struct StoreDeadLetterTests {
    /// Six jobs: job-0…job-2 dead-lettered under incident 1, job-3 under incident 2, job-4
    /// without one, job-5 queued.
    private func withDeadLetters(_ body: (JobStore) async throws -> Void) async throws {
        try await StoreTestDirectory.withStore { store, _ in
            _ = try await store.enqueue(StoreTestDirectory.newJobs(6))
            for index in 0..<3 { try store.markDeadLettered("job-\(index)", reason: "422: field \(index)", incident: 1) }
            try store.markDeadLettered("job-3", reason: "413: too large", incident: 2)
            try store.markDeadLettered("job-4", reason: "400: bad", incident: nil)
            try await body(store)
        }
    }

    @Test func pendingCountsAreByServiceAndLeaveFinishedJobsOut() async throws {
        try await withDeadLetters { store throws in
            var loader = StoreTestDirectory.newJobs(3, prefix: "resource")
            for index in loader.indices { loader[index].service = "loader" }
            _ = try await store.enqueue(loader)
            try store.markInFlight("resource-0")
            try store.markDelivered(["resource-1"])
            try store.markDiscarded("job-4")
            let pending = try store.pendingCounts()
            #expect(pending["sync"] == JobCounts([.deadLettered: 4, .queued: 1]))
            #expect(pending["loader"] == JobCounts([.inFlight: 1, .queued: 1]))
            #expect(pending.count == 2)
        }
    }

    @Test func deadLettersAreListedAllOrByIncident() async throws {
        try await withDeadLetters { store throws in
            #expect(try store.deadLetters().map(\.id) == ["job-0", "job-1", "job-2", "job-3", "job-4"])
            #expect(try store.deadLetters(incident: 1).map(\.id) == ["job-0", "job-1", "job-2"])
            #expect(try store.deadLetters(incident: 2).map(\.reason) == ["413: too large"])
            #expect(try store.deadLetters(incident: 99).isEmpty)
        }
    }

    @Test func retryingQueuesThemAgainWithTheirReasonAsLastError() async throws {
        try await withDeadLetters { store throws in
            #expect(try store.retryDeadLetters(incident: 1) == 3)
            let retried = try #require(try store.job("job-1"))
            #expect(retried.state == .queued && retried.lastError == "422: field 1" && retried.reason == nil)
            #expect(retried.incident == nil && retried.attempts == 1)
            #expect(try store.deadLetters().map(\.id) == ["job-3", "job-4"])

            #expect(try store.retryDeadLetter("job-3"))
            #expect(try store.retryDeadLetter("job-3") == false)
            #expect(try store.retryDeadLetter("job-5") == false)  // queued, not a dead letter

            #expect(try store.retryDeadLetters() == 1)
            #expect(try store.deadLetters().isEmpty)
            #expect(try store.counts() == JobCounts([.queued: 6]))
        }
    }

    @Test func discardingReturnsTheJobsSoTheirFilesCanGo() async throws {
        try await withDeadLetters { store throws in
            let discarded = try store.discardDeadLetters(incident: 1)
            #expect(discarded.map(\.id) == ["job-0", "job-1", "job-2"])
            #expect(discarded.allSatisfy { $0.state == .discarded && $0.reason?.hasPrefix("422") == true })
            #expect(try discarded.allSatisfy { try store.job($0.id) == $0 })

            let one = try #require(try store.discardDeadLetter("job-4"))
            #expect(one.path == "/var/spool/errorbusd/outbox/job-4.json" && one.state == .discarded)
            #expect(try store.discardDeadLetter("job-4") == nil)
            #expect(try store.discardDeadLetter("job-5") == nil)

            #expect(try store.discardDeadLetters().map(\.id) == ["job-3"])
            #expect(try store.counts() == JobCounts([.discarded: 5, .queued: 1]))
        }
    }
}
