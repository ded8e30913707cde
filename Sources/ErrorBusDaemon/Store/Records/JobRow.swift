import Foundation
import GRDB

/// A row of the `job` table (see ``StoreSchema``). The public face is ``OutboxJob``.
struct JobRow: Codable, FetchableRecord, PersistableRecord, StoreDates {
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
