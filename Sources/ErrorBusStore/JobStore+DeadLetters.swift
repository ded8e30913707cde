import Foundation
import GRDB
import Logging

/// What an operator does with the jobs the API rejected.
extension JobStore {
    /// The dead letters, oldest first: all of them, or those of one incident.
    package func deadLetters(incident: UInt64? = nil) throws(StoreError) -> [OutboxJob] {
        try read("listing dead letters") { db in
            var request = OutboxJob.filter(Column("state") == JobState.deadLettered.rawValue)
            if let incident { request = request.filter(Column("incident") == incident) }
            return try request.order(Column("seq")).fetchAll(db)
        }
    }

    /// Queues dead letters again — all of them, or those of one incident. Their reason becomes
    /// their `lastError`; `attempts` is kept; their failures on their own are forgotten (an
    /// operator retries once the cause is fixed). Returns how many.
    @discardableResult
    package func retryDeadLetters(incident: UInt64? = nil) throws(StoreError) -> Int {
        let now = storeNow().storeMilliseconds
        let count = try write("retrying dead letters") { db in
            var sql = """
                UPDATE job SET state = 'queued', lastError = reason, reason = NULL, incident = NULL, ownFailures = 0, updatedAt = ?
                WHERE state = 'deadLettered'
                """
            var arguments: StatementArguments = [now]
            if let incident {
                sql += " AND incident = ?"
                _ = arguments.append(contentsOf: [incident])
            }
            try db.execute(sql: sql, arguments: arguments)
            return db.changesCount
        }
        if count > 0 {
            logger.info("Dead letters queued again", metadata: ["count": "\(count)", "incident": "\(incident.map(String.init) ?? "all")"])
        }
        return count
    }

    /// Queues one dead letter again. Returns whether it was a dead letter.
    @discardableResult
    package func retryDeadLetter(_ id: String) throws(StoreError) -> Bool {
        try update(
            [id],
            "retrying dead letter \(id)",
            sql: """
                UPDATE job SET state = 'queued', lastError = reason, reason = NULL, incident = NULL, ownFailures = 0, updatedAt = :now
                WHERE id = :id AND state = 'deadLettered'
                """
        ) == 1
    }

    /// Gives up a queued job no upload has taken yet. Returns whether it was queued.
    @discardableResult
    package func discardQueued(_ id: String) throws(StoreError) -> Bool {
        try update(
            [id],
            "discarding queued job \(id)",
            sql: "UPDATE job SET state = 'discarded', reason = 'discarded by an operator', updatedAt = :now WHERE id = :id AND state IN ('queued', 'parked')"
        ) == 1
    }

    /// Discards dead letters — all of them, or those of one incident — and returns them as they
    /// now are, so that the service can remove or move their files.
    @discardableResult
    package func discardDeadLetters(incident: UInt64? = nil) throws(StoreError) -> [OutboxJob] {
        let now = storeNow()
        let discarded = try write("discarding dead letters") { db in
            var request = OutboxJob.filter(Column("state") == JobState.deadLettered.rawValue)
            if let incident { request = request.filter(Column("incident") == incident) }
            let rows = try request.order(Column("seq")).fetchAll(db)
            let statement = try db.cachedStatement(sql: "UPDATE job SET state = 'discarded', updatedAt = ? WHERE id = ?")
            return try rows.map { row in
                try statement.execute(arguments: [now.storeMilliseconds, row.id.storedJobKey])
                var job = row
                job.state = .discarded
                job.updatedAt = now
                return job
            }
        }
        if !discarded.isEmpty {
            logger.info("Dead letters discarded", metadata: ["count": "\(discarded.count)", "incident": "\(incident.map(String.init) ?? "all")"])
        }
        return discarded
    }

    /// Discards one dead letter and returns it as it now is; `nil` if it was not a dead letter.
    @discardableResult
    package func discardDeadLetter(_ id: String) throws(StoreError) -> OutboxJob? {
        let now = storeNow()
        return try write("discarding dead letter \(id)") { db in
            guard var job = try OutboxJob.filter(Column("id") == id.storedJobKey && Column("state") == JobState.deadLettered.rawValue).fetchOne(db) else {
                return nil
            }
            try db.execute(sql: "UPDATE job SET state = 'discarded', updatedAt = ? WHERE id = ?", arguments: [now.storeMilliseconds, id.storedJobKey])
            job.state = .discarded
            job.updatedAt = now
            return job
        }
    }
}
