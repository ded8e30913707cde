package import Foundation
import GRDB
import Logging

/// The backlog, its limits, and the retention of dead letters: what errorbusd gives up on
/// purpose, and says why.
extension JobStore {
    /// The jobs waiting for delivery (queued, in flight and parked under an incident).
    package struct Backlog: Sendable, Equatable {
        /// How many.
        package var jobs: Int
        /// Their files' bytes together.
        package var bytes: Int64
        /// When the oldest of them was queued; `nil` when there is none.
        package var oldest: Date?

        package init(jobs: Int = 0, bytes: Int64 = 0, oldest: Date? = nil) {
            self.jobs = jobs
            self.bytes = bytes
            self.oldest = oldest
        }
    }

    /// The backlog of every service (or of one): three `job_count` rows and the first entry of
    /// each state in the `job_state` index, however many jobs wait.
    package func backlog(service: String? = nil) throws(StoreError) -> Backlog {
        try read("reading the backlog") { db in
            var countSQL = "SELECT COALESCE(SUM(count), 0), COALESCE(SUM(bytes), 0) FROM job_count WHERE state IN ('queued', 'inFlight', 'parked')"
            var arguments: StatementArguments = []
            if let service {
                countSQL += " AND service = ?"
                arguments = [service]
            }
            let totals = try Row.fetchOne(db, sql: countSQL, arguments: arguments)
            var backlog = Backlog(jobs: totals?[0] ?? 0, bytes: totals?[1] ?? 0)
            // Rows are inserted as they are queued: the lowest seq of a state is its oldest job.
            for state in ["queued", "inFlight", "parked"] {
                var sql = "SELECT createdAt FROM job WHERE state = ?"
                var arguments: StatementArguments = [state]
                if let service {
                    sql += " AND service = ?"
                    _ = arguments.append(contentsOf: [service])
                }
                sql += " ORDER BY seq LIMIT 1"
                if let milliseconds = try Int64.fetchOne(db, sql: sql, arguments: arguments) {
                    let date = Date(storeMilliseconds: milliseconds)
                    backlog.oldest = min(backlog.oldest ?? date, date)
                }
            }
            return backlog
        }
    }

    /// What the store knows of the outbox files `names`, by name: the size and modification
    /// time recorded with the latest of `service`'s jobs that may still have its file in the
    /// outbox (waiting, dead letters, discarded). A name missing is no such job's.
    ///
    /// What a rescan asks, a slice of names at a time, instead of remembering every file it took:
    /// one walk of an index of those jobs' names.
    package func knownFiles(service: String, named names: some Collection<String>) throws(StoreError) -> [String: KnownFile] {
        guard !names.isEmpty else { return [:] }
        var arguments: StatementArguments = [service]
        arguments += StatementArguments(names)
        let placeholders = Array(repeating: "?", count: names.count).joined(separator: ",")
        return try read("looking up \(names.count) outbox files") { [arguments] db in
            var known: [String: KnownFile] = [:]
            let rows = try Row.fetchCursor(
                db,
                sql: "SELECT fileName, size, modifiedAt FROM job INDEXED BY job_file WHERE state != 'delivered' AND service = ? AND fileName IN (\(placeholders)) ORDER BY seq",
                arguments: arguments
            )
            // Oldest first: a name's latest job is the one that stays.
            while let row = try rows.next() {
                known[row["fileName"]] = KnownFile(size: row["size"], modifiedNanoseconds: row["modifiedAt"])
            }
            return known
        }
    }

    /// What ``pruneDeadLetters(keeping:before:)`` gave up.
    package struct DeadLetterPrune: Sendable, Equatable {
        /// Dead letters over the count limit, oldest first.
        package var overCount: [OutboxJob] = []
        /// Dead letters set aside before the age limit, oldest first.
        package var tooOld: [OutboxJob] = []

        package var all: [OutboxJob] { tooOld + overCount }
        package var isEmpty: Bool { overCount.isEmpty && tooOld.isEmpty }
    }

    /// Gives up the oldest dead letters (by when they were set aside) beyond `maxCount`, and
    /// those set aside before `date`, in one transaction, each a walk of the dead letters' own
    /// index from the oldest (`INDEXED BY`: without statistics SQLite took the `job_state` index
    /// and sorted every dead letter, 60 ms at 100,000 for one pruned): they become `discarded` with the reason,
    /// and are returned so that their files can be removed.
    ///
    /// Only dead letters that were sent at least once (`attempts` above 0) are given up: one set
    /// aside for room before it was ever tried is good work that waited behind bad work, and
    /// stays until an operator retries or discards it. It still counts towards `maxCount`.
    package func pruneDeadLetters(keeping maxCount: Int, before date: Date?) throws(StoreError) -> DeadLetterPrune {
        let now = storeNow()
        let prune = try write("pruning dead letters") { db in
            var prune = DeadLetterPrune()
            let discard = try db.cachedStatement(sql: "UPDATE job SET state = 'discarded', reason = ?, updatedAt = ? WHERE seq = ?")
            func give(_ rows: [Row], reason: String) throws -> [OutboxJob] {
                try rows.map { row in
                    var job = try OutboxJob(row: row)
                    try discard.execute(arguments: [reason, now.storeMilliseconds, row["seq"] as Int64])
                    job.state = .discarded
                    job.reason = reason
                    job.updatedAt = now
                    return job
                }
            }
            if let date {
                let rows = try Row.fetchAll(
                    db,
                    sql: "SELECT * FROM job INDEXED BY job_dead_letter_age WHERE state = 'deadLettered' AND attempts > 0 AND updatedAt < ? ORDER BY updatedAt",
                    arguments: [date.storeMilliseconds]
                )
                prune.tooOld = try give(rows, reason: "pruned: a dead letter for longer than sync.dead-letters.max-age")
            }
            let count = try Int.fetchOne(db, sql: "SELECT COALESCE(SUM(count), 0) FROM job_count WHERE state = 'deadLettered'") ?? 0
            if count > maxCount {
                let rows = try Row.fetchAll(
                    db,
                    sql: "SELECT * FROM job INDEXED BY job_dead_letter_age WHERE state = 'deadLettered' AND attempts > 0 ORDER BY updatedAt LIMIT ?",
                    arguments: [count - maxCount]
                )
                prune.overCount = try give(rows, reason: "pruned: more than sync.dead-letters.max-count (\(maxCount)) dead letters")
            }
            return prune
        }
        return prune
    }

    /// Sets aside waiting jobs (not those in flight: an upload runs) until the backlog, those
    /// included, fits `maxBytes` and `maxJobs`, as dead letters with `reason`, in one
    /// transaction: first the parked jobs that failed on their own, then the other parked ones
    /// (they failed under an incident, or met one before they ran), then the queued ones, each
    /// oldest first. Bad work goes before good work that merely waits. Returns them in that order.
    package func dropOldestQueued(service: String = "sync", maxBytes: Int64?, maxJobs: Int?, reason: String) throws(StoreError) -> [OutboxJob] {
        guard maxBytes != nil || maxJobs != nil else { return [] }
        let now = storeNow()
        return try write("dropping the oldest queued jobs") { db in
            let totals = try Row.fetchOne(
                db,
                sql: "SELECT COALESCE(SUM(count), 0), COALESCE(SUM(bytes), 0) FROM job_count WHERE state IN ('queued', 'inFlight', 'parked') AND service = ?",
                arguments: [service]
            )
            var jobs: Int = totals?[0] ?? 0
            var bytes: Int64 = totals?[1] ?? 0
            func over() -> Bool { jobs > (maxJobs ?? .max) || bytes > (maxBytes ?? .max) }
            guard over() else { return [] }
            // Each a walk of an index in insertion order, which stops once the backlog fits.
            let walks = [
                "SELECT * FROM job WHERE state = 'parked' AND service = ? AND ownFailures > 0 ORDER BY seq",
                "SELECT * FROM job WHERE state = 'parked' AND service = ? AND ownFailures = 0 ORDER BY seq",
                "SELECT * FROM job WHERE state = 'queued' AND service = ? ORDER BY seq",
            ]
            var dropped: [OutboxJob] = []
            for walk in walks where over() {
                let oldest = try Row.fetchCursor(db, sql: walk, arguments: [service])
                while over(), let row = try oldest.next() {
                    var job = try OutboxJob(row: row)
                    job.state = .deadLettered
                    job.reason = reason
                    job.updatedAt = now
                    dropped.append(job)
                    jobs -= 1
                    bytes -= job.size
                }
            }
            let mark = try db.cachedStatement(
                sql: "UPDATE job SET state = 'deadLettered', reason = ?, incident = NULL, failedUnder = 0, updatedAt = ? WHERE id = ? AND state IN ('queued', 'parked')"
            )
            for job in dropped {
                try mark.execute(arguments: [reason, now.storeMilliseconds, job.id.storedJobKey])
            }
            return dropped
        }
    }
}

/// An outbox file as the store knows it: what its latest job recorded of it.
package struct KnownFile: Sendable, Equatable {
    /// Its size when it was queued.
    package var size: Int64
    /// Its modification time when it was queued, in nanoseconds since the epoch; `nil` for jobs
    /// recorded before the store kept it.
    package var modifiedNanoseconds: Int64?

    package init(size: Int64, modifiedNanoseconds: Int64?) {
        self.size = size
        self.modifiedNanoseconds = modifiedNanoseconds
    }
}
