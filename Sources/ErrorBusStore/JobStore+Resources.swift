import Foundation
import GRDB

/// The validators of a resource's local copy (RFC 9110 §8.8): sent back as `If-None-Match` and
/// `If-Modified-Since`, so that an unchanged resource costs a `304` and no body.
package struct ResourceValidators: Sendable, Equatable {
    /// The `ETag` the copy came with.
    package var etag: String?
    /// The `Last-Modified` the copy came with, as the server wrote it.
    package var lastModified: String?

    package init(etag: String? = nil, lastModified: String? = nil) {
        self.etag = etag
        self.lastModified = lastModified
    }
}

/// What the loader remembers of each remote resource.
extension JobStore {
    /// The validators of the local copy of `resource`, if it was fetched from `url` (a copy from
    /// another URL, before a configuration change, has nothing to compare with).
    package func validators(forResource resource: String, url: String) throws(StoreError) -> ResourceValidators? {
        try read("reading the validators of \(resource)") { db in
            guard let row = try ResourceRow.fetchOne(db, key: resource) else { return nil }
            // Rows from before URLs were recorded came from the resources path: take them.
            guard row.url == nil || row.url == url else { return nil }
            return ResourceValidators(etag: row.etag, lastModified: row.lastModified)
        }
    }

    /// Remembers the validators of the local copy of `resource`, fetched from `url`.
    package func setValidators(_ validators: ResourceValidators, forResource resource: String, url: String) throws(StoreError) {
        let row = ResourceRow(name: resource, etag: validators.etag, lastModified: validators.lastModified, url: url, updatedAt: storeNow())
        try write("saving the validators of \(resource)") { db in
            try row.upsert(db)
        }
    }
}
