package import Foundation
import GRDB
import Logging

extension JobStore {
    // MARK: Enqueueing

    /// Makes `new` durable jobs, `queued`, in one transaction.
    ///
    /// A job whose id (its content's key) the store already knows is not inserted again: it is
    /// listed in ``EnqueueResult/duplicates`` with the known job, so the caller can tell a rescan
    /// of a file it already has (same path), a second copy of pending content (another path), and
    /// content already delivered (``EnqueueResult/alreadyDelivered``: remove the duplicate file).
    ///
    /// Discarding gives up a job, not its content for ever: the same content arriving again in
    /// another file, or in the discarded job's file written after the discard (``OutboxFile/modifiedAt``),
    /// replaces the discarded job with a new one, listed in ``EnqueueResult/inserted`` and in
    /// ``EnqueueResult/replacedDiscarded``. The discarded file itself, found again by a rescan or
    /// a restart, stays discarded.
    ///
    /// With `redeliver` (an API that tells files by name, whose consumers may remove what they
    /// took), a delivered job's file written again after the delivery, with the same content, is
    /// uploaded again: the delivered job is replaced by a new one, listed in ``EnqueueResult/inserted``
    /// and ``EnqueueResult/replacedDelivered``. The delivered file itself, left by a stop between
    /// the delivery and its removal (written before the delivery), stays a duplicate.
    ///
    /// With `incident`, the new jobs are parked under it rather than queued, as jobs that merely
    /// wait (``parkQueued(under:limit:)``): it holds their uploads back as they arrive, and each
    /// is written once.
    package func enqueue(_ new: [OutboxFile], redeliver: Bool = false, parkedUnder incident: UInt64? = nil) async throws(StoreError) -> EnqueueResult {
        guard !new.isEmpty else { return EnqueueResult(inserted: [], duplicates: []) }
        let now = storeNow()
        let milliseconds = now.storeMilliseconds
        let state: JobState = incident == nil ? .queued : .parked
        return try await writeSuspending("saving \(new.count) new job(s)") { db in
            let insert = try db.cachedStatement(
                sql: """
                    INSERT INTO job (id, digest, service, fileName, path, size, state, incident, failedUnder, attempts, createdAt, updatedAt, modifiedAt)
                    VALUES (?, ?, ?, ?, ?, ?, ?, ?, 0, 0, ?, ?, ?)
                    ON CONFLICT(id) DO NOTHING
                    """
            )
            let stamp = try db.cachedStatement(sql: "UPDATE job SET modifiedAt = ? WHERE id = ?")
            var inserted: [OutboxJob] = []
            inserted.reserveCapacity(new.count)
            var duplicates: [EnqueueResult.Duplicate] = []
            var replacedDiscarded: [OutboxJob] = []
            var replacedDelivered: [OutboxJob] = []
            for job in new {
                let created = job.arrivedAt.map { min($0.storeMilliseconds, milliseconds) } ?? milliseconds
                func insertQueued() throws -> Bool {
                    try insert.execute(arguments: [job.id.storedJobKey, job.digest, job.service, job.fileName, job.path, job.size, state.rawValue, incident, created, milliseconds, job.modifiedNanoseconds])
                    return db.changesCount == 1
                }
                if try !insertQueued() {
                    guard let existing = try OutboxJob.filter(Column("id") == job.id.storedJobKey).fetchOne(db) else { continue }
                    let again =
                        switch existing.state {
                        case .discarded: Self.arrivedAgain(job, after: existing)
                        case .delivered: redeliver && Self.writtenAfterDelivery(job, existing)
                        default: false
                        }
                    guard again else {
                        if job.path == existing.path, existing.state != .delivered, let modified = job.modifiedNanoseconds {
                            // Its own file, read again: its stamp spares the next rescan that.
                            try stamp.execute(arguments: [modified, job.id.storedJobKey])
                        }
                        duplicates.append(EnqueueResult.Duplicate(new: job, existing: existing))
                        continue
                    }
                    // Its content arrived again: a new job in place of the discarded one.
                    try db.execute(sql: "DELETE FROM job WHERE id = ?", arguments: [job.id.storedJobKey])
                    guard try insertQueued() else { continue }
                    if existing.state == .delivered { replacedDelivered.append(existing) } else { replacedDiscarded.append(existing) }
                }
                inserted.append(
                    OutboxJob(
                        id: job.id,
                        digest: job.digest,
                        service: job.service,
                        fileName: job.fileName,
                        path: job.path,
                        size: job.size,
                        state: state,
                        incident: incident,
                        createdAt: Date(storeMilliseconds: created),
                        updatedAt: now
                    )
                )
            }
            return EnqueueResult(inserted: inserted, duplicates: duplicates, replacedDiscarded: replacedDiscarded, replacedDelivered: replacedDelivered)
        }
    }

    /// Whether `job` brings the content of the discarded `existing` again: in another file, or in
    /// its file written after the discard.
    static func arrivedAgain(_ job: OutboxFile, after existing: OutboxJob) -> Bool {
        if job.path != existing.path { return true }
        guard let modified = job.modifiedAt else { return false }
        return modified.storeMilliseconds > existing.updatedAt.storeMilliseconds
    }

    /// Whether `job`, with the content of the delivered `existing`, was written after that delivery:
    /// dropped again, not the delivered file left in place by a stop before its removal.
    static func writtenAfterDelivery(_ job: OutboxFile, _ existing: OutboxJob) -> Bool {
        guard let modified = job.modifiedAt else { return false }
        return modified.storeMilliseconds > (existing.deliveredAt ?? existing.updatedAt).storeMilliseconds
    }

    /// Gives up the pending jobs of the file at `path` other than `id`: the file was written again
    /// with other content, which job `id` now is. The queued, parked and dead-lettered ones are
    /// discarded with `reason` (a parked one keeps its incident); those in flight (an upload
    /// runs) are left for the caller to end when their turn comes. Returns both.
    ///
    /// Walks the pending jobs, there being no index of paths: for the rare file written again
    /// while its job waits, not for every new file.
    package func supersede(path: String, service: String, by id: String, reason: String) throws(StoreError) -> (discarded: [OutboxJob], inFlight: [OutboxJob]) {
        let now = storeNow()
        return try write("giving up the jobs replaced by \(id)") { db in
            let older = try OutboxJob.fetchAll(
                db,
                sql: "SELECT * FROM job WHERE state IN ('queued', 'inFlight', 'parked', 'deadLettered') AND path = ? AND service = ? AND id != ?",
                arguments: [path, service, id.storedJobKey]
            )
            var discarded: [OutboxJob] = []
            var inFlight: [OutboxJob] = []
            for job in older {
                guard job.state != .inFlight else {
                    inFlight.append(job)
                    continue
                }
                try db.execute(
                    sql: "UPDATE job SET state = 'discarded', reason = ?, failedUnder = 0, updatedAt = ? WHERE id = ?",
                    arguments: [reason, now.storeMilliseconds, job.id.storedJobKey]
                )
                var given = job
                given.state = .discarded
                given.reason = reason
                given.failedUnder = false
                discarded.append(given)
            }
            return (discarded, inFlight)
        }
    }

    // MARK: Claiming

    /// Takes up to `limit` queued jobs, oldest first, and marks them `inFlight`, in one
    /// transaction: they are the caller's to run, and a restart after a crash queues them again.
    package func claimQueued(limit: Int) async throws(StoreError) -> [OutboxJob] {
        guard limit > 0 else { return [] }
        let now = storeNow()
        let milliseconds = now.storeMilliseconds
        return try await writeSuspending("claiming queued jobs") { db in
            // A walk of the `job_state` index in insertion order: it stops after `limit` rows,
            // whatever the size of the queue.
            // Decoded from the statement's own rows (a copied row looks every column name up
            // with a case-insensitive walk), marked once the walk is over.
            // Those whose back-off is not over yet (`retryAt`) wait: few, a scope's paced runs.
            let queued = try db.cachedStatement(sql: "SELECT * FROM job WHERE state = 'queued' AND (retryAt IS NULL OR retryAt <= ?) ORDER BY seq LIMIT ?")
            var claimed: [(seq: Int64, job: OutboxJob)] = []
            claimed.reserveCapacity(limit)
            let rows = try Row.fetchCursor(queued, arguments: [milliseconds, limit])
            while let row = try rows.next() {
                claimed.append((row["seq"], try OutboxJob(row: row)))
            }
            let mark = try db.cachedStatement(sql: "UPDATE job SET state = 'inFlight', retryAt = NULL, updatedAt = ? WHERE seq = ?")
            return try claimed.map { seq, job in
                try mark.execute(arguments: [milliseconds, seq])
                var job = job
                job.state = .inFlight
                job.updatedAt = now
                return job
            }
        }
    }

    // MARK: Reading jobs

    /// The job with this id, whatever its state.
    package func job(_ id: String) throws(StoreError) -> OutboxJob? {
        try read("reading job \(id)") { db in
            try OutboxJob.filter(Column("id") == id.storedJobKey).fetchOne(db)
        }
    }

    /// One page of jobs, oldest first, optionally of one service and in one state.
    package func jobs(service: String? = nil, state: JobState? = nil, offset: Int = 0, limit: Int = 100) throws(StoreError) -> [OutboxJob] {
        try read("listing jobs") { db in
            var request = OutboxJob.all()
            if let service { request = request.filter(Column("service") == service) }
            if let state { request = request.filter(Column("state") == state.rawValue) }
            return try request.order(Column("seq")).limit(max(0, limit), offset: max(0, offset)).fetchAll(db)
        }
    }

    /// The jobs with these ids, in the order of `ids`; ids the store does not know are left out.
    package func jobs(ids: [String]) throws(StoreError) -> [OutboxJob] {
        guard !ids.isEmpty else { return [] }
        return try read("reading \(ids.count) job(s)") { db in
            let statement = try db.cachedStatement(sql: "SELECT * FROM job WHERE id = ?")
            return try ids.compactMap { id in try OutboxJob.fetchOne(statement, arguments: [id.storedJobKey]) }
        }
    }

    /// How many jobs are in each state, optionally of one service. Reads the `job_count` rows the
    /// schema's triggers keep: a few rows, however many jobs there are.
    package func counts(service: String? = nil) throws(StoreError) -> JobCounts {
        try read("counting jobs") { db in
            let rows: [Row] =
                if let service {
                    try Row.fetchAll(db, sql: "SELECT state, count FROM job_count WHERE service = ?", arguments: [service])
                } else {
                    try Row.fetchAll(db, sql: "SELECT state, SUM(count) FROM job_count GROUP BY state")
                }
            var counts = JobCounts()
            for row in rows {
                let state: String = row[0]
                if let state = JobState(rawValue: state) { counts[state] = row[1] }
            }
            return counts
        }
    }

    /// How many jobs of each service are pending (queued, in flight, parked, dead-lettered), from
    /// the `job_count` rows: as cheap with 100,000 parked jobs as with none. For status displays.
    package func pendingCounts() throws(StoreError) -> [String: JobCounts] {
        try read("counting pending jobs") { db in
            let rows = try Row.fetchAll(
                db,
                sql: """
                    SELECT service, state, count FROM job_count
                    WHERE state IN ('queued', 'inFlight', 'parked', 'deadLettered') AND count > 0
                    """
            )
            var counts: [String: JobCounts] = [:]
            for row in rows {
                let service: String = row[0]
                let state: String = row[1]
                if let state = JobState(rawValue: state) { counts[service, default: JobCounts()][state] = row[2] }
            }
            return counts
        }
    }

    // MARK: Changing state

    /// Marks queued jobs `inFlight`. Returns how many were queued (the others are left alone).
    @discardableResult
    package func markInFlight(_ ids: [String]) throws(StoreError) -> Int {
        try update(
            ids,
            "marking \(ids.count) job(s) in flight",
            sql: "UPDATE job SET state = 'inFlight', updatedAt = :now WHERE id = :id AND state = 'queued'"
        )
    }

    /// Marks a queued job `inFlight`. Returns whether it was queued.
    @discardableResult
    package func markInFlight(_ id: String) throws(StoreError) -> Bool {
        try markInFlight([id]) == 1
    }

    /// Sends a job back to the queue after a failed attempt: `attempts` grows by one, `lastError`
    /// is kept, the incident is cleared; with `retryAt`, no claim takes it before then (its scope
    /// paced it). Returns whether it was queued, in flight or parked.
    @discardableResult
    package func markQueued(_ id: String, lastError: String?, retryAt: Date? = nil) throws(StoreError) -> Bool {
        try update(
            [id],
            "requeueing job \(id)",
            sql: """
                UPDATE job SET state = 'queued', attempts = attempts + 1, lastError = :lastError,
                    incident = NULL, failedUnder = 0, retryAt = :retryAt, updatedAt = :now
                WHERE id = :id AND state IN ('queued', 'inFlight', 'parked')
                """,
            ["lastError": lastError, "retryAt": retryAt?.storeMilliseconds]
        ) == 1
    }

    /// Records that a pending job failed on its own `ownFailures` times (the bus set it aside), so
    /// that after a restart it is set aside again at its next failure. Returns whether it was
    /// pending.
    @discardableResult
    package func markIsolated(_ id: String, ownFailures: Int) throws(StoreError) -> Bool {
        try update(
            [id],
            "recording job \(id) as failing on its own",
            sql: """
                UPDATE job SET ownFailures = MAX(ownFailures, :ownFailures), updatedAt = :now
                WHERE id = :id AND state IN ('queued', 'inFlight', 'parked')
                """,
            ["ownFailures": ownFailures]
        ) == 1
    }

    /// Records jobs delivered, in one transaction. Returns how many were not delivered already.
    ///
    /// Delivery is a fact: a job an operator discarded or dead-lettered meanwhile is recorded
    /// delivered too. For completions arriving one by one, prefer the batched
    /// ``markDelivered(_:)-(String)``.
    @discardableResult
    package func markDelivered(_ ids: [String]) throws(StoreError) -> Int {
        try update(ids, "recording \(ids.count) job(s) delivered", sql: Self.markDeliveredSQL)
    }

    static let markDeliveredSQL = """
        UPDATE job SET state = 'delivered', attempts = attempts + 1, failedUnder = 0, deliveredAt = :now, updatedAt = :now
        WHERE id = :id AND state != 'delivered'
        """

    /// Sets a job aside until an operator retries or discards it. `attempts`: the uploads the
    /// outcome counts (one for a rejected upload; none for a job set aside before it was sent,
    /// which the dead letters' retention never gives up). `incident` replaces a parked job's.
    /// Returns whether it was queued, in flight or parked.
    @discardableResult
    package func markDeadLettered(_ id: String, reason: String, incident: UInt64?, attempts: Int = 1) throws(StoreError) -> Bool {
        try update(
            [id],
            "dead-lettering job \(id)",
            sql: """
                UPDATE job SET state = 'deadLettered', reason = :reason, incident = :incident, failedUnder = 0,
                    attempts = attempts + :attempts, updatedAt = :now
                WHERE id = :id AND state IN ('queued', 'inFlight', 'parked')
                """,
            ["reason": reason, "incident": incident, "attempts": attempts]
        ) == 1
    }

    /// Gives a job up. Returns whether it was pending (queued, in flight, parked or dead-lettered).
    /// With a `reason`, it replaces the job's; otherwise a dead letter keeps its. A parked job
    /// or a dead letter keeps its incident.
    @discardableResult
    package func markDiscarded(_ id: String, reason: String? = nil) throws(StoreError) -> Bool {
        try update(
            [id],
            "discarding job \(id)",
            sql: """
                UPDATE job SET state = 'discarded', reason = COALESCE(:reason, reason), failedUnder = 0, updatedAt = :now
                WHERE id = :id AND state IN ('queued', 'inFlight', 'parked', 'deadLettered')
                """,
            ["reason": reason]
        ) == 1
    }

    /// Runs one `UPDATE` per id in one transaction, with `:id`, `:now` and `extra` bound, and
    /// returns how many rows changed.
    func update(_ ids: [String], _ action: @autoclosure () -> String, sql: String, _ extra: StatementArguments = [:]) throws(StoreError) -> Int {
        guard !ids.isEmpty else { return 0 }
        let now = storeNow().storeMilliseconds
        return try write(action()) { db in
            let statement = try db.cachedStatement(sql: sql)
            var changed = 0
            for id in ids {
                var arguments: StatementArguments = ["id": id.storedJobKey, "now": now]
                _ = arguments.append(contentsOf: extra)
                try statement.execute(arguments: arguments)
                changed += db.changesCount
            }
            return changed
        }
    }

    // MARK: Start and housekeeping

    /// Every job left `inFlight` is `queued` again, in its place (its failure under an incident
    /// cleared, attempts unchanged), and so is a `parked` one of no incident (builds before
    /// 0.3.0 left such rows). Returns how many: few, the uploads that were under way.
    ///
    /// errorbusd calls it when it stops, once its services have, for the uploads the drain
    /// timeout cut off; and when it starts, for those of a run that ended without stopping. The
    /// jobs parked under the last run's incidents, however many, stay parked until sync, once
    /// running, releases them (``releaseParked(_:limit:)``): a start with a million of them is
    /// not held up by an `UPDATE` of a million rows.
    @discardableResult
    package func requeueInterrupted() throws(StoreError) -> Int {
        let now = storeNow().storeMilliseconds
        return try write("requeueing interrupted jobs") { db in
            try db.execute(
                sql: "UPDATE job SET state = 'queued', incident = NULL, failedUnder = 0, updatedAt = ? WHERE state = 'inFlight'",
                arguments: [now]
            )
            let inFlight = db.changesCount
            try db.execute(
                sql: "UPDATE job INDEXED BY job_parked SET state = 'queued', failedUnder = 0, updatedAt = ? WHERE state = 'parked' AND incident IS NULL",
                arguments: [now]
            )
            return inFlight + db.changesCount
        }
    }

    /// At start, after a crash of the machine: discards every pending job whose file is gone, so
    /// that it does not wait forever for content nobody can upload, and returns them.
    ///
    /// The service removes a file only after its job is recorded delivered; with
    /// ``StoreDurability/processCrash`` a power loss can undo that record but keep the removal,
    /// leaving a queued job without a file. Such a job was most likely delivered (its reason says
    /// so); a file removed by hand ends the same way.
    ///
    /// The pending jobs are read a page at a time, and `fileExists` is called for each outside
    /// any transaction: memory follows the page, not the backlog, and other readers and writers
    /// go between the pages. Call it at start, before uploads begin.
    @discardableResult
    package func reconcileFiles(page: Int = 4_096, fileExists: (OutboxJob) -> Bool) throws(StoreError) -> [OutboxJob] {
        let reason = "Its file was gone at start: most likely delivered just before the machine stopped, or removed by hand."
        var discarded: [OutboxJob] = []
        var after: Int64 = 0
        while true {
            let rows = try read("reconciling jobs with the outbox") { [after] db in
                try Row.fetchAll(
                    db,
                    sql: "SELECT * FROM job WHERE seq > ? AND state IN ('queued', 'inFlight', 'parked', 'deadLettered') ORDER BY seq LIMIT ?",
                    arguments: [after, page]
                )
                .map { (seq: $0["seq"] as Int64, job: try OutboxJob(row: $0)) }
            }
            guard let last = rows.last else { break }
            after = last.seq
            let missing = rows.map(\.job).filter { !fileExists($0) }
            guard !missing.isEmpty else { continue }
            let now = storeNow()
            discarded += try write("reconciling jobs with the outbox") { db in
                let statement = try db.cachedStatement(
                    sql: "UPDATE job SET state = 'discarded', reason = ?, failedUnder = 0, updatedAt = ? WHERE id = ? AND state IN ('queued', 'inFlight', 'parked', 'deadLettered')"
                )
                return try missing.compactMap { job in
                    try statement.execute(arguments: [reason, now.storeMilliseconds, job.id.storedJobKey])
                    guard db.changesCount == 1 else { return nil }
                    var job = job
                    job.state = .discarded
                    job.reason = reason
                    job.failedUnder = false
                    job.updatedAt = now
                    return job
                }
            }
        }
        if !discarded.isEmpty {
            logger.warning(
                "Pending jobs whose file is gone were discarded",
                metadata: ["count": "\(discarded.count)", "reason": "\(reason)"]
            )
        }
        return discarded
    }

    /// Deletes delivered and discarded jobs last changed before `date`, `batch` at a time (one
    /// transaction each, so that other writes go between them). Returns how many.
    ///
    /// A delivered job is what tells ``enqueue(_:)`` that the same content dropped again needs no
    /// upload; once it is pruned, such a copy is uploaded again (harmless: the API answers 200 to
    /// a known idempotency key).
    ///
    /// `deliveredOnly`: a discarded job stays, the record that its file, still in the outbox,
    /// must not be sent.
    @discardableResult
    package func pruneFinished(before date: Date, deliveredOnly: Bool = false, batch: Int = 10_000) throws(StoreError) -> Int {
        let states = deliveredOnly ? "('delivered')" : "('delivered', 'discarded')"
        var total = 0
        while true {
            let deleted = try write("pruning finished jobs") { db in
                try db.execute(
                    sql: """
                        DELETE FROM job WHERE seq IN (
                            SELECT seq FROM job WHERE state IN \(states) AND updatedAt < ? LIMIT ?
                        )
                        """,
                    arguments: [date.storeMilliseconds, batch]
                )
                return db.changesCount
            }
            total += deleted
            if deleted < batch { return total }
        }
    }
}
