@testable import ErrorBusStore
import Foundation
import GRDB
import Testing

import ErrorBusDaemon

@Suite struct StoreDeliveryTests {
    @Test func markDeliveredReturnsOnceCommitted() async throws {
        try await StoreTestDirectory.with { directory in
            let store = try JobStore(directory: directory, logger: StoreTestDirectory.logger())
            _ = try await store.enqueue(StoreTestDirectory.newJobs(2))
            #expect(try await store.markDelivered("job-0"))
            #expect(try await store.markDelivered("job-0") == false)
            #expect(try await store.markDelivered("missing") == false)
            // Visible to a reader connection as soon as the call returned…
            let job = try #require(try store.job("job-0"))
            #expect(job.state == .delivered && job.deliveredAt != nil)
            // The delivery was an upload tried: a job delivered at once shows one attempt.
            #expect(job.attempts == 1)
            try await store.close()

            // …and to the next process.
            let reopened = try JobStore(directory: directory, logger: StoreTestDirectory.logger())
            #expect(try reopened.counts() == JobCounts([.delivered: 1, .queued: 1]))
            try await reopened.close()
        }
    }

    @Test func completionsArrivingDuringACommitShareTheNextTransaction() async throws {
        try await StoreTestDirectory.withStore { store, _ in
            let ids = try await store.enqueue(StoreTestDirectory.newJobs(500)).inserted.map(\.id)
            let before = store.deliveryStatistics

            // Hold the writer, as a long commit would, while every completion arrives.
            let writer = WriterGate()
            store.pool.asyncWriteWithoutTransaction { _ in writer.hold() }
            try await withThrowingTaskGroup(of: Bool.self) { group in
                for id in ids {
                    group.addTask { try await store.markDelivered(id) }
                }
                while store.deliveries.waitingCount < ids.count { await Task.yield() }
                writer.release()
                var changed = 0
                for try await result in group where result { changed += 1 }
                #expect(changed == ids.count)
            }

            let after = store.deliveryStatistics
            #expect(after.transactions - before.transactions == 1)
            #expect(after.completions - before.completions == ids.count)
            #expect(after.largestBatch == ids.count)
            #expect(try store.counts().delivered == ids.count)
        }
    }

    @Test func withoutAGatherTimeALoneCompletionIsCommittedWithoutWaitingForCompany() async throws {
        try await StoreTestDirectory.withStore(deliveryGatherTime: .zero) { store, _ in
            _ = try await store.enqueue(StoreTestDirectory.newJobs(3))
            for id in ["job-0", "job-1", "job-2"] { try await store.markDelivered(id) }
            #expect(store.deliveryStatistics == DeliveryStatistics(transactions: 3, completions: 3, largestBatch: 1))
        }
    }

    @Test(.timeLimit(.minutes(1)))
    func aLoneCompletionIsCommittedOnceTheGatherTimeIsOver() async throws {
        let gatherTime = Duration.milliseconds(50)
        try await StoreTestDirectory.withStore(deliveryGatherTime: gatherTime) { store, _ in
            _ = try await store.enqueue(StoreTestDirectory.newJobs(2))
            // Nothing but the timer commits it: no other completion, no flush. A lower bound
            // only (the timer cannot fire early); committed at once, it would return sooner.
            let clock = ContinuousClock()
            let started = clock.now
            #expect(try await store.markDelivered("job-0"))
            #expect(started.duration(to: clock.now) >= gatherTime)
            #expect(store.deliveryStatistics == DeliveryStatistics(transactions: 1, completions: 1, largestBatch: 1))
            #expect(try store.job("job-0")?.state == .delivered)
        }
    }

    @Test func completionsGatherUntilTheBatchIsFull() async throws {
        // A gather time no test outlives: only a full batch can commit.
        try await StoreTestDirectory.withStore(deliveryGatherTime: .seconds(3600)) { store, _ in
            let limit = store.deliveries.limit
            let ids = try await store.enqueue(StoreTestDirectory.newJobs(limit)).inserted.map(\.id)
            try await withThrowingTaskGroup(of: Bool.self) { group in
                for id in ids.dropLast() {
                    group.addTask { try await store.markDelivered(id) }
                }
                while store.deliveries.waitingCount < limit - 1 {
                    // Committed without waiting: the batch did not gather.
                    try #require(store.deliveryStatistics.transactions == 0)
                    await Task.yield()
                }
                #expect(try store.counts().delivered == 0)

                group.addTask { try await store.markDelivered(ids[limit - 1]) }
                var changed = 0
                for try await result in group where result { changed += 1 }
                #expect(changed == limit)
            }
            #expect(store.deliveryStatistics == DeliveryStatistics(transactions: 1, completions: limit, largestBatch: limit))
            #expect(try store.counts().delivered == limit)
        }
    }

    @Test(.timeLimit(.minutes(1)))
    func flushCommitsCompletionsStillGathering() async throws {
        try await StoreTestDirectory.withStore(deliveryGatherTime: .seconds(3600)) { store, _ in
            _ = try await store.enqueue(StoreTestDirectory.newJobs(1))
            let completion = Task { try await store.markDelivered("job-0") }
            while store.deliveries.waitingCount < 1 {
                try #require(store.deliveryStatistics.transactions == 0)
                await Task.yield()
            }
            try await store.flush()
            // Required: when flush left it waiting, closing the store is what ends the task.
            try #require(try store.counts().delivered == 1)
            #expect(try await completion.value)
        }
    }

    @Test func flushAndCloseWaitForEveryCompletionHandedOver() async throws {
        try await StoreTestDirectory.with { directory in
            let store = try JobStore(directory: directory, logger: StoreTestDirectory.logger())
            let ids = try await store.enqueue(StoreTestDirectory.newJobs(200)).inserted.map(\.id)

            let writer = WriterGate()
            store.pool.asyncWriteWithoutTransaction { _ in writer.hold() }
            // Completions handed over without anyone waiting for them here…
            let completions = Task {
                try await withThrowingDiscardingTaskGroup { group in
                    for id in ids.prefix(100) { group.addTask { try await store.markDelivered(id) } }
                }
            }
            while store.deliveries.waitingCount < 100 { await Task.yield() }
            async let flushed: Void = store.flush()
            writer.release()
            // …are committed when flush() returns.
            try await flushed
            #expect(try store.counts().delivered == 100)
            try await completions.value

            // close() does the same for the rest.
            store.pool.asyncWriteWithoutTransaction { _ in writer.hold() }
            let rest = Task {
                try await withThrowingDiscardingTaskGroup { group in
                    for id in ids.suffix(100) { group.addTask { try await store.markDelivered(id) } }
                }
            }
            while store.deliveries.waitingCount < 100 { await Task.yield() }
            async let closed: Void = store.close()
            writer.release()
            try await closed
            try await rest.value

            let reopened = try JobStore(directory: directory, logger: StoreTestDirectory.logger())
            #expect(try reopened.counts().delivered == 200)
            try await reopened.close()
        }
    }

    @Test func aFailedBatchFailsEveryCompletionInIt() async throws {
        try await StoreTestDirectory.withStore { store, _ in
            _ = try await store.enqueue(StoreTestDirectory.newJobs(10))
            // A trigger stands in for a disk error in the middle of the batch.
            try store.write("test") { db in
                try db.execute(
                    sql: """
                        CREATE TRIGGER refuse AFTER UPDATE ON job WHEN NEW.id = 'job-5'
                        BEGIN SELECT RAISE(ABORT, 'simulated failure'); END
                        """
                )
            }
            let writer = WriterGate()
            store.pool.asyncWriteWithoutTransaction { _ in writer.hold() }
            let failures = try await withThrowingTaskGroup(of: StoreError?.self) { group in
                for index in 0..<10 {
                    group.addTask {
                        do {
                            try await store.markDelivered("job-\(index)")
                            return nil
                        } catch let error as StoreError {
                            return error
                        }
                    }
                }
                while store.deliveries.waitingCount < 10 { await Task.yield() }
                writer.release()
                return try await group.reduce(into: [StoreError]()) { if let error = $1 { $0.append(error) } }
            }
            #expect(failures.count == 10)
            #expect(failures.allSatisfy { $0.description.contains("simulated failure") })
            // Rolled back as a whole.
            #expect(try store.counts().delivered == 0)
        }
    }
}

/// Holds GRDB's writer queue (from a write scheduled on it) until the test releases it.
private final class WriterGate: Sendable {
    private let semaphore = DispatchSemaphore(value: 0)

    func hold() { semaphore.wait() }
    func release() { semaphore.signal() }
}
