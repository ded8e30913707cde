import Foundation
import GRDB
import Logging

/// Recording uploads delivered at upload rate: completions arriving together share one
/// transaction (group commit).
extension JobStore {
    /// Records a job delivered; returns once that is committed, so the caller may then remove or
    /// move its file. Returns whether the job was not delivered already.
    ///
    /// Completions arriving while a batch commits wait for the next one, which records them all
    /// in one transaction: under load a batch holds whatever arrived during the previous commit,
    /// with no timer, and a lone completion is committed at once. Not cancellable: the commit is
    /// a matter of microseconds (or one disk sync with ``StoreDurability/powerLoss``).
    @discardableResult
    public func markDelivered(_ id: String) async throws(StoreError) -> Bool {
        guard !isClosed else { throw closedError("recording job \(id) delivered") }
        let result = await withCheckedContinuation { continuation in
            if deliveries.add(DeliveryBatcher.Waiter(id: id, continuation: continuation)) {
                // The writer queue runs it after the writes already scheduled; it takes every
                // completion that arrived by then.
                pool.asyncWriteWithoutTransaction { db in
                    self.commitDeliveries(db)
                }
            }
        }
        return try result.get()
    }

    /// Returns once every completion handed to ``markDelivered(_:)-(String)`` before the call is
    /// committed (or failed). ``close()`` does this too.
    public func flush() async throws(StoreError) {
        guard !isClosed else { return }
        do {
            // Scheduled after every pending batch on the serial writer queue.
            try await pool.writeWithoutTransaction { _ in }
        } catch {
            throw classify(error, action: "recording delivered jobs")
        }
    }

    /// How the batched ``markDelivered(_:)-(String)`` has grouped completions so far.
    public var deliveryStatistics: DeliveryStatistics { deliveries.statistics }

    /// Commits the batch waiting now, on the writer queue.
    private func commitDeliveries(_ db: Database) {
        let batch = deliveries.takeBatch()
        guard !batch.isEmpty else { return }
        let now = Date.storeNow().storeMilliseconds
        do {
            var changed = [Bool]()
            changed.reserveCapacity(batch.count)
            try db.inTransaction {
                let statement = try db.cachedStatement(sql: Self.markDeliveredSQL)
                for waiter in batch {
                    try statement.execute(arguments: ["id": waiter.id, "now": now])
                    changed.append(db.changesCount == 1)
                }
                return .commit
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
