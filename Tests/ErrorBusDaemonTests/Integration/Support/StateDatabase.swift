import ErrorBusDaemon
import ErrorBusStore
import GRDB

/// The daemon's SQLite state, opened read-only beside the running daemon (which holds the
/// store's lock, so a second `JobStore` would be refused).
struct StateDatabase {
    struct Job: Decodable, FetchableRecord {
        let id: String
        let fileName: String
        let state: String
        let incident: Int64?
        let reason: String?
        /// When it was queued (or arrived, for a file that waited for room), in milliseconds.
        let createdAt: Int64
        /// How many times it failed on its own (the bus set it aside).
        let ownFailures: Int
    }

    struct Incident: Decodable, FetchableRecord {
        let id: Int64
        let state: String
        let resolution: String?
        let closedAt: Int64?
    }

    private let queue: DatabaseQueue

    init(directory: String) throws {
        var configuration = Configuration()
        configuration.readonly = true
        queue = try DatabaseQueue(path: directory + "/" + JobStore.databaseFileName, configuration: configuration)
    }

    /// How many jobs are in `state`.
    func count(_ state: JobState) throws -> Int {
        try queue.read { db in
            try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM job WHERE state = ?", arguments: [state.rawValue]) ?? 0
        }
    }

    /// The jobs in `state`, oldest first.
    func jobs(_ state: JobState) throws -> [Job] {
        try queue.read { db in
            // A key stored as its digest's bytes is read as its hex, as the daemon tells it.
            try Job.fetchAll(
                db,
                sql: """
                    SELECT CASE typeof(id) WHEN 'blob' THEN lower(hex(id)) ELSE id END AS id,
                        fileName, state, incident, reason, createdAt, ownFailures
                    FROM job WHERE state = ? ORDER BY seq
                    """,
                arguments: [state.rawValue]
            )
        }
    }

    /// How many jobs are in each state.
    func counts() throws -> [String: Int] {
        try queue.read { db in
            let rows = try Row.fetchAll(db, sql: "SELECT state, COUNT(*) AS n FROM job GROUP BY state")
            return Dictionary(uniqueKeysWithValues: rows.map { ($0["state"] as String, $0["n"] as Int) })
        }
    }

    /// The incident history, oldest first.
    func incidents() throws -> [Incident] {
        try queue.read { db in try Incident.fetchAll(db, sql: "SELECT id, state, resolution, closedAt FROM incident ORDER BY id") }
    }

    /// SQLite's `PRAGMA integrity_check`: `["ok"]` for a sound database.
    func integrityCheck() throws -> [String] {
        try queue.read { db in try String.fetchAll(db, sql: "PRAGMA integrity_check") }
    }
}
