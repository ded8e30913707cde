import ErrorBusSupport
import Foundation
import GRDB
import Logging

/// Recording uploads delivered at upload rate: completions arriving together share one
/// transaction (group commit).
extension JobStore {
    /// Records a job delivered; returns once that is committed, so the caller may then remove or
    /// move its file. Returns whether the job was not delivered already.
    ///
    /// Completions gather for the store's `deliveryGatherTime` (a few milliseconds) after the
    /// first of them arrives, and one transaction records them all; a full batch (64) is
    /// committed at once. Each transaction costs its `BEGIN`, its `COMMIT` and the pages it writes to the WAL
    /// (and a disk sync with ``StoreDurability/powerLoss``), so an upload loop that frees its
    /// slot before this returns pays them once for many files. Not cancellable: the wait is the
    /// gather time and one commit.
    @discardableResult
    package func markDelivered(_ id: String) async throws(StoreError) -> Bool {
        guard !isClosed else { throw closedError("recording job \(id) delivered") }
        let result = await withCheckedContinuation { continuation in
            switch deliveries.add(DeliveryBatcher.Waiter(id: id, continuation: continuation)) {
            case .none:
                break
            case .later:
                DispatchQueue.global().asyncAfter(deadline: .now() + deliveries.gatherTime.timeInterval) {
                    self.scheduleCommit()
                }
            case .now:
                scheduleCommit()
            }
        }
        return try result.get()
    }

    /// The writer queue runs the commit after the writes already scheduled; it takes every
    /// completion that arrived by then.
    private func scheduleCommit() {
        pool.asyncWriteWithoutTransaction { db in
            self.commitDeliveries(db)
        }
    }

    /// Returns once every completion handed to ``markDelivered(_:)-(String)`` before the call is
    /// committed (or failed). ``close()`` does this too.
    package func flush() async throws(StoreError) {
        guard !isClosed else { return }
        do {
            // After every batch already on the serial writer queue; takes the completions still
            // gathering.
            try await pool.writeWithoutTransaction { db in self.commitDeliveries(db) }
        } catch {
            throw classify(error, action: "recording delivered jobs")
        }
    }

    /// How the batched ``markDelivered(_:)-(String)`` has grouped completions so far.
    package var deliveryStatistics: DeliveryStatistics { deliveries.statistics }

    /// Commits the batch waiting now, on the writer queue.
    func commitDeliveries(_ db: Database) {
        let batch = deliveries.takeBatch()
        guard !batch.isEmpty else { return }
        let now = storeNow().storeMilliseconds
        do {
            var changed = [Bool]()
            changed.reserveCapacity(batch.count)
            try db.inPreparedTransaction {
                let statement = try db.cachedStatement(sql: Self.markDeliveredSQL)
                for waiter in batch {
                    try statement.execute(arguments: ["id": waiter.id.storedJobKey, "now": now])
                    changed.append(db.changesCount == 1)
                }
            }
            deliveries.committed(batch.count)
            for (waiter, changed) in zip(batch, changed) {
                waiter.continuation.resume(returning: .success(changed))
            }
        } catch {
            let error = classify(error, action: "recording \(batch.count) job(s) delivered")
            logger.error("Could not record delivered jobs", metadata: ["count": "\(batch.count)", "error": "\(error)"])
            for waiter in batch {
                waiter.continuation.resume(returning: .failure(error))
            }
        }
    }
}
