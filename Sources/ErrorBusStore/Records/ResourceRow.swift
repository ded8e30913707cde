import Foundation
import GRDB

/// A row of the `resource` table: what the loader knows of one remote resource.
struct ResourceRow: Codable, FetchableRecord, PersistableRecord, StoreDates {
    static let databaseTableName = "resource"

    /// The resource's name, as in `GET /v1/resources/{name}`.
    var name: String
    /// The `ETag` of the local copy, sent as `If-None-Match`.
    var etag: String?
    var updatedAt: Date
}
