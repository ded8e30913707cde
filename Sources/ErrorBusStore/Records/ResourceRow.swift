import Foundation
import GRDB

/// A row of the `resource` table: what the loader knows of one remote resource.
struct ResourceRow: Codable, FetchableRecord, PersistableRecord, StoreDates {
    static let databaseTableName = "resource"

    /// The resource's name, as its local copy is named.
    var name: String
    /// The `ETag` of the local copy, sent as `If-None-Match`.
    var etag: String?
    /// The `Last-Modified` of the local copy, sent as `If-Modified-Since`.
    var lastModified: String?
    /// The URL the copy was fetched from; `nil` in rows older than the column.
    var url: String?
    var updatedAt: Date
}
