import ErrorBusDaemon
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
            try Job.fetchAll(db, sql: "SELECT * FROM job WHERE state = ? ORDER BY seq", arguments: [state.rawValue])
        }
    }
}
