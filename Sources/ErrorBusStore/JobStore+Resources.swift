import Foundation
import GRDB

/// What the loader remembers of each remote resource.
extension JobStore {
    /// The `ETag` of the local copy of `resource`, to send as `If-None-Match`.
    package func etag(forResource resource: String) throws(StoreError) -> String? {
        try read("reading the ETag of \(resource)") { db in
            try ResourceRow.fetchOne(db, key: resource)?.etag
        }
    }

    /// Remembers the `ETag` of the local copy of `resource` (`nil` forgets it).
    package func setETag(_ etag: String?, forResource resource: String) throws(StoreError) {
        let row = ResourceRow(name: resource, etag: etag, updatedAt: Date.storeNow())
        try write("saving the ETag of \(resource)") { db in
            try row.upsert(db)
        }
    }
}
