import Foundation
import GRDB

/// A row of the `job` table (see ``StoreSchema``), read only: the store writes jobs with SQL of
/// its own. The public face is ``OutboxJob``.
struct JobRow: FetchableRecord, TableRecord {
    static let databaseTableName = "job"

    var id: String
    var service: String
    var fileName: String
    var path: String
    var size: Int64
    var state: JobState
    var attempts: Int
    var lastError: String?
    var incident: UInt64?
    var reason: String?
    var createdAt: Date
    var updatedAt: Date
    var deliveredAt: Date?

    /// Read by column name, without `Decodable`: a claim decodes every job it takes, and GRDB's
    /// record decoder took nearly half of the claim's time.
    init(row: Row) throws {
        id = try row.decode(forColumn: "id")
        service = try row.decode(forColumn: "service")
        fileName = try row.decode(forColumn: "fileName")
        path = try row.decode(forColumn: "path")
        size = try row.decode(forColumn: "size")
        let state: String = try row.decode(forColumn: "state")
        guard let known = JobState(rawValue: state) else {
            throw DecodingError.dataCorrupted(.init(codingPath: [], debugDescription: "job \(id) is in state \(state), which this errorbusd does not know"))
        }
        self.state = known
        attempts = try row.decode(forColumn: "attempts")
        lastError = try row.decode(forColumn: "lastError")
        incident = try row.decode(forColumn: "incident")
        reason = try row.decode(forColumn: "reason")
        createdAt = Date(storeMilliseconds: try row.decode(forColumn: "createdAt"))
        updatedAt = Date(storeMilliseconds: try row.decode(forColumn: "updatedAt"))
        deliveredAt = try row.decode(Int64?.self, forColumn: "deliveredAt").map(Date.init(storeMilliseconds:))
    }

    var job: OutboxJob {
        OutboxJob(
            id: id,
            service: service,
            fileName: fileName,
            path: path,
            size: size,
            state: state,
            attempts: attempts,
            lastError: lastError,
            incident: incident,
            reason: reason,
            createdAt: createdAt,
            updatedAt: updatedAt,
            deliveredAt: deliveredAt
        )
    }
}
