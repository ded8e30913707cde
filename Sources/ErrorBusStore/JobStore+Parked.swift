import Foundation
import GRDB
import Logging

/// The jobs incidents of the bus hold back: a waiting upload is a row, `parked` under its
/// incident, and only a row, so that an outage of a day costs the bus no memory per job.
///
/// Each statement below walks the `job_parked` index (`13 parked jobs`), which holds only the
/// parked jobs by incident, those that merely wait before those that failed, oldest first:
/// `INDEXED BY`, so that no statistics ever make SQLite take the `job_state` index instead and
/// walk the parked jobs of every incident. `StoreParkedTests` holds the plans to it.
extension JobStore {
    /// Parks a job under `incident`: `failed` when it ran and met the incident, not when it was
    /// held back behind it before it ran. `runs`: the uploads the run that parked it made, added
    /// to its attempts (none for a job held back). Returns whether it was queued or in flight.
    @discardableResult
    package func markParked(_ id: String, incident: UInt64, failed: Bool, runs: Int = 0) throws(StoreError) -> Bool {
        try update(
            [id],
            "parking job \(id) under incident \(incident)",
            sql: """
                UPDATE job SET state = 'parked', incident = :incident, failedUnder = :failed,
                    attempts = attempts + :runs, updatedAt = :now
                WHERE id = :id AND state IN ('queued', 'inFlight')
                """,
            ["incident": incident, "failed": failed, "runs": runs]
        ) == 1
    }

    /// Parks up to `limit` queued jobs under `incident`, oldest first, as jobs that merely wait
    /// (they did not run): the incident holds their uploads back, so they wait under it rather
    /// than in the queue. Their back-off, if their scope paced them, is over (the incident's
    /// release paces them now). One transaction, suspending the caller rather than blocking
    /// it. Returns how many.
    package func parkQueued(under incident: UInt64, limit: Int) async throws(StoreError) -> Int {
        let now = storeNow().storeMilliseconds
        return try await writeSuspending("parking the queued jobs under incident \(incident)") { db in
            try db.execute(sql: Self.parkQueuedSQL, arguments: [incident, now, limit])
            return db.changesCount
        }
    }

    static let parkQueuedSQL = """
        UPDATE job SET state = 'parked', incident = ?, failedUnder = 0, retryAt = NULL, updatedAt = ?
        WHERE seq IN (SELECT seq FROM job WHERE state = 'queued' ORDER BY seq LIMIT ?)
        """

    /// Takes back the next job parked under `incident` and marks it `inFlight`, its incident
    /// cleared, in one transaction: the caller runs it (a probe of the incident's cause, or the
    /// next of its released work), and a restart queues it again. The jobs that merely wait
    /// come first (they have not met the cause yet), then those that failed under it, each
    /// oldest first. The job keeps ``OutboxJob/failedUnder`` until its outcome is recorded.
    /// `nil` when none is parked under it.
    package func takeParked(under incident: UInt64) throws(StoreError) -> OutboxJob? {
        let now = storeNow()
        return try write("taking a job parked under incident \(incident)") { db in
            let next = try db.cachedStatement(sql: Self.takeParkedSQL)
            guard let row = try Row.fetchOne(next, arguments: [incident]) else { return nil }
            var job = try OutboxJob(row: row)
            try db.execute(
                sql: "UPDATE job SET state = 'inFlight', incident = NULL, updatedAt = ? WHERE seq = ?",
                arguments: [now.storeMilliseconds, row["seq"] as Int64]
            )
            job.state = .inFlight
            job.incident = nil
            job.updatedAt = now
            return job
        }
    }

    static let takeParkedSQL = """
        SELECT * FROM job INDEXED BY job_parked WHERE state = 'parked' AND incident = ?
        ORDER BY failedUnder, seq LIMIT 1
        """

    /// The jobs parked under `incident`, in the order its canaries take them, at most `limit`.
    package func parkedJobs(under incident: UInt64, limit: Int) throws(StoreError) -> [OutboxJob] {
        try read("reading the jobs parked under incident \(incident)") { db in
            try Row.fetchAll(db, sql: Self.takeParkedSQL.replacingOccurrences(of: "LIMIT 1", with: "LIMIT ?"), arguments: [incident, limit]).map { row throws in try OutboxJob(row: row) }
        }
    }

    /// Queues up to `limit` jobs parked under `incident` again, in their places (their `seq`:
    /// the oldest are claimed first), their incident and failure under it cleared and their
    /// attempts unchanged, in one transaction: the incident ended. Called until it returns less
    /// than `limit`, so that no transaction holds the writer for a million rows. Returns how
    /// many.
    ///
    /// Those that failed under it are not claimed before `failedBackOff` has passed: they go behind those
    /// that merely waited, as the bus releases its own, so that the first uploads after an
    /// incident are of jobs that never met its cause, and a job that fails on its own does not
    /// take the slot its scope gives the release first.
    @discardableResult
    package func releaseParked(_ incident: UInt64, limit: Int = .max, failedBackOff: Duration = .zero) async throws(StoreError) -> Int {
        let now = storeNow().storeMilliseconds
        let retryAt = failedBackOff > .zero ? now + Int64(failedBackOff / .milliseconds(1)) : nil
        return try await writeSuspending("releasing the jobs parked under incident \(incident)") { db in
            try db.execute(sql: Self.releaseParkedSQL, arguments: [retryAt, now, incident, limit])
            return db.changesCount
        }
    }

    static let releaseParkedSQL = """
        UPDATE job SET state = 'queued', retryAt = CASE WHEN failedUnder THEN ? END, incident = NULL, failedUnder = 0, updatedAt = ?
        WHERE seq IN (SELECT seq FROM job INDEXED BY job_parked WHERE state = 'parked' AND incident = ? LIMIT ?)
        """

    /// How many jobs are parked under each incident, from the `parked_count` rows the schema's
    /// triggers keep: a few rows, however many jobs are parked. Incidents with none are left out.
    package func parkedCounts() throws(StoreError) -> [UInt64: Int] {
        try read("counting parked jobs") { db in
            let rows = try Row.fetchAll(db, sql: Self.parkedCountsSQL)
            return Dictionary(uniqueKeysWithValues: rows.map { ($0[0] as UInt64, $0[1] as Int) })
        }
    }

    static let parkedCountsSQL = "SELECT incident, count FROM parked_count WHERE count > 0"

    /// Where the queue stands as a release is asked for: every job it holds then, up to the newest,
    /// and those of them in flight (claimed before it, or a canary). What the release waits for is
    /// every other of those jobs to have run (``hasRun(since:)``).
    package struct ReleaseMark: Sendable, Equatable {
        /// The newest job's `seq`: jobs taken in later are not the release's.
        package var newest: Int64
        /// The jobs in flight then, whose runs began before the release.
        package var inFlight: Set<Int64>
    }

    /// The queue as a release is asked for (``ReleaseMark``): two index reads, whatever the size
    /// of the queue.
    package func releaseMark() throws(StoreError) -> ReleaseMark {
        try read("reading where the queue stands") { db in
            let newest = try Int64.fetchOne(db, sql: "SELECT MAX(seq) FROM job") ?? 0
            let inFlight = try Int64.fetchSet(db.cachedStatement(sql: Self.inFlightSQL), arguments: [newest])
            return ReleaseMark(newest: newest, inFlight: inFlight)
        }
    }

    /// Whether every job the queue held at `mark` has run since, its verdict recorded: none of
    /// them is queued (a paced job waiting out its back-off is), and none is in flight but those
    /// in flight at `mark`. Parked again, delivered, set aside or removed all count as run. An
    /// index read for the oldest queued job and one for the few in flight.
    package func hasRun(since mark: ReleaseMark) throws(StoreError) -> Bool {
        try read("reading whether the released jobs ran") { db in
            if try Int64.fetchOne(db.cachedStatement(sql: Self.oldestQueuedSQL), arguments: [mark.newest]) != nil { return false }
            let inFlight = try Int64.fetchCursor(db.cachedStatement(sql: Self.inFlightSQL), arguments: [mark.newest])
            while let seq = try inFlight.next() {
                if !mark.inFlight.contains(seq) { return false }
            }
            return true
        }
    }

    static let oldestQueuedSQL = "SELECT seq FROM job WHERE state = 'queued' AND seq <= ? ORDER BY seq LIMIT 1"
    static let inFlightSQL = "SELECT seq FROM job WHERE state = 'inFlight' AND seq <= ?"

    /// Discards every job parked under `incident` with `reason`, in one `UPDATE`: an operator
    /// gives up an incident's work. They keep their incident, which tells what they waited on;
    /// their files stay in the outbox, the record that they must not be sent. Returns how many.
    @discardableResult
    package func discardParked(_ incident: UInt64, reason: String) throws(StoreError) -> Int {
        let now = storeNow().storeMilliseconds
        let count = try write("discarding the jobs parked under incident \(incident)") { db in
            try db.execute(
                sql: """
                    UPDATE job INDEXED BY job_parked SET state = 'discarded', reason = ?, failedUnder = 0, updatedAt = ?
                    WHERE state = 'parked' AND incident = ?
                    """,
                arguments: [reason, now, incident]
            )
            return db.changesCount
        }
        if count > 0 {
            logger.info("Parked jobs discarded", metadata: ["count": "\(count)", "incident": "\(incident)", "reason": "\(reason)"])
        }
        return count
    }

    /// Discards one parked job: an operator cancels it. It keeps its incident, which tells what
    /// it waited on. Returns whether it was parked.
    @discardableResult
    package func discardParked(job id: String) throws(StoreError) -> Bool {
        try update(
            [id],
            "discarding parked job \(id)",
            sql: """
                UPDATE job SET state = 'discarded', reason = 'discarded by an operator', failedUnder = 0, updatedAt = :now
                WHERE id = :id AND state = 'parked'
                """
        ) == 1
    }

    /// Queues one parked job again now, in its place, out of its incident (cleared), its
    /// attempts unchanged: an operator retries it. Returns whether it was parked.
    @discardableResult
    package func retryParked(_ id: String) throws(StoreError) -> Bool {
        try update(
            [id],
            "retrying parked job \(id)",
            sql: """
                UPDATE job SET state = 'queued', incident = NULL, failedUnder = 0, updatedAt = :now
                WHERE id = :id AND state = 'parked'
                """
        ) == 1
    }
}
