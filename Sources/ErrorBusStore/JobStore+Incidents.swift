package import ErrorBus
package import Foundation
import GRDB

/// The incident history: what the bus saw, kept after the bus forgot it and across restarts.
extension JobStore {
    /// Records an incident as it stands, at `now` (the store's clock when `nil`): inserted the
    /// first time its id is seen, updated after. Its wall-clock times are the bus's.
    @discardableResult
    package func recordIncident(_ snapshot: IncidentSnapshot, at now: Date? = nil) throws(StoreError) -> StoredIncident {
        let incident = StoredIncident(snapshot, updatedAt: now ?? storeNow())
        try write("recording incident \(snapshot.id)") { db in try incident.upsert(db) }
        return incident
    }

    /// Closes every incident the history still shows open, as `resolution` at `now` (the store's
    /// clock when `nil`), and
    /// returns them as they were: the incidents a run of errorbusd ended without recording their
    /// end. Their jobs are queued again (``requeueInterrupted()``, and sync releases those parked
    /// under them at its start); a cause that is still there
    /// opens a new incident.
    ///
    /// errorbusd calls it when it stops (``Resolution/shutdown``) and when it starts, for a run
    /// that ended without stopping (``Resolution/interrupted``: a crash, `kill -9`, a power loss).
    @discardableResult
    package func closeOpenIncidents(as resolution: Resolution, at now: Date? = nil) throws(StoreError) -> [StoredIncident] {
        let closedAt = now?.atStorePrecision ?? storeNow()
        return try write("closing the incidents left open") { db in
            let open = try StoredIncident.filter(Column("resolution") == nil).order(Column("id")).fetchAll(db)
            for var incident in open {
                incident.resolution = resolution
                incident.state = .resolved
                incident.updatedAt = closedAt
                incident.closedAt = closedAt
                try incident.update(db)
            }
            return open
        }
    }

    /// The incident with this id.
    package func incident(_ id: UInt64) throws(StoreError) -> StoredIncident? {
        try read("reading incident \(id)") { db in
            try StoredIncident.fetchOne(db, key: id)
        }
    }

    /// The most recent incidents, newest first.
    package func incidents(limit: Int = 100) throws(StoreError) -> [StoredIncident] {
        try read("listing incidents") { db in
            try StoredIncident.order(Column("id").desc).limit(max(0, limit)).fetchAll(db)
        }
    }

    /// The highest incident id ever recorded, so that a restarted bus continues the numbering
    /// (`ErrorBusConfiguration.firstIncidentID = lastIncidentID + 1`).
    package func lastIncidentID() throws(StoreError) -> UInt64? {
        try read("reading the last incident id") { db in
            try UInt64.fetchOne(db, sql: "SELECT MAX(id) FROM incident")
        }
    }

    /// Deletes resolved incidents older than the `keepingLatest` newest ones (at least one is
    /// kept, so ``lastIncidentID()`` never goes back). Returns how many.
    @discardableResult
    package func pruneIncidents(keepingLatest count: Int) throws(StoreError) -> Int {
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
