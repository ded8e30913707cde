public import ErrorBus
public import Foundation
import GRDB

/// The incident history: what the bus saw, kept after the bus forgot it and across restarts.
extension JobStore {
    /// Records an incident as it stands: inserted the first time its id is seen, updated after.
    ///
    /// Wall-clock times come from `now` and the snapshot's `age`: the first record fixes
    /// `openedAt` (`now - age`); a resolved snapshot sets `closedAt` (`openedAt + age`).
    @discardableResult
    public func recordIncident(_ snapshot: IncidentSnapshot, at now: Date = Date()) throws(StoreError) -> StoredIncident {
        try write("recording incident \(snapshot.id)") { db in
            let openedAt = try IncidentRow.fetchOne(db, key: snapshot.id.rawValue)?.openedAt
            let row = IncidentRow(snapshot, openedAt: openedAt, now: now)
            try row.upsert(db)
            return row.incident
        }
    }

    /// Closes every incident the history still shows open, as `resolution` at `now`, and
    /// returns them as they were: the incidents a run of errorbusd ended without recording their
    /// end. Their jobs are queued again (``requeueInterrupted()``); a cause that is still there
    /// opens a new incident.
    ///
    /// errorbusd calls it when it stops (``Resolution/shutdown``) and when it starts, for a run
    /// that ended without stopping (``Resolution/interrupted``: a crash, `kill -9`, a power loss).
    @discardableResult
    public func closeOpenIncidents(as resolution: Resolution, at now: Date = Date()) throws(StoreError) -> [StoredIncident] {
        try write("closing the incidents left open") { db in
            let open = try IncidentRow.filter(Column("resolution") == nil).order(Column("id")).fetchAll(db)
            let closedAt = Date(storeMilliseconds: now.storeMilliseconds)
            for var row in open {
                row.resolution = resolution.rawValue
                row.state = IncidentState.resolved.rawValue
                row.updatedAt = closedAt
                row.closedAt = closedAt
                try row.update(db)
            }
            return open.map(\.incident)
        }
    }

    /// The incident with this id.
    public func incident(_ id: UInt64) throws(StoreError) -> StoredIncident? {
        try read("reading incident \(id)") { db in
            try IncidentRow.fetchOne(db, key: id)?.incident
        }
    }

    /// The most recent incidents, newest first.
    public func incidents(limit: Int = 100) throws(StoreError) -> [StoredIncident] {
        try read("listing incidents") { db in
            try IncidentRow.order(Column("id").desc).limit(max(0, limit)).fetchAll(db).map(\.incident)
        }
    }

    /// The highest incident id ever recorded, so that a restarted bus continues the numbering
    /// (`ErrorBusConfiguration.firstIncidentID = lastIncidentID + 1`).
    public func lastIncidentID() throws(StoreError) -> UInt64? {
        try read("reading the last incident id") { db in
            try UInt64.fetchOne(db, sql: "SELECT MAX(id) FROM incident")
        }
    }

    /// Deletes resolved incidents older than the `keepingLatest` newest ones (at least one is
    /// kept, so ``lastIncidentID()`` never goes back). Returns how many.
    @discardableResult
    public func pruneIncidents(keepingLatest count: Int) throws(StoreError) -> Int {
        try write("pruning incidents") { db in
            try db.execute(
                sql: """
                    DELETE FROM incident WHERE resolution IS NOT NULL
                    AND id < (SELECT MIN(id) FROM (SELECT id FROM incident ORDER BY id DESC LIMIT ?))
                    """,
                arguments: [max(1, count)]
            )
            return db.changesCount
        }
    }
}
