import Foundation
import GRDB

/// A large file's upload in parts (S3's multipart upload), as far as it got: the store's, so that
/// an outage, a restart or a `kill -9` resumes at the next part instead of from zero.
package struct MultipartProgress: Sendable, Equatable {
    /// The store's id of the upload (`UploadId`).
    package var uploadID: String
    /// The object's URL the upload was started for: another (a changed key template) is another
    /// upload.
    package var url: String
    /// The size of every part but the last, in bytes.
    package var partSize: Int64
    /// The parts the store has acknowledged, by number (from 1).
    package var parts: [Int: Part]

    /// One acknowledged part.
    package struct Part: Sendable, Equatable {
        /// The `ETag` the store answered it with, as sent back when the upload is completed.
        package var etag: String
        /// Its SHA-256, base64: what the store checked it against.
        package var checksum: String

        package init(etag: String, checksum: String) {
            self.etag = etag
            self.checksum = checksum
        }
    }

    package init(uploadID: String, url: String, partSize: Int64, parts: [Int: Part] = [:]) {
        self.uploadID = uploadID
        self.url = url
        self.partSize = partSize
        self.parts = parts
    }
}

/// A multipart upload whose job is over without a delivery (discarded, set aside as a dead
/// letter, or gone): the store still holds its parts until it is aborted.
package struct AbandonedMultipart: Sendable, Equatable {
    package var jobID: String
    package var uploadID: String
    package var url: String
}

extension JobStore {
    /// How far the multipart upload of job `id` got; `nil` when none was started.
    package func multipartProgress(of id: String) throws(StoreError) -> MultipartProgress? {
        try read("reading the multipart upload of job \(id.prefix(12))") { db in
            let key = StoredJobKey(id)
            guard let row = try Row.fetchOne(db, sql: "SELECT uploadID, url, partSize FROM multipart_upload WHERE job = ?", arguments: [key]) else {
                return nil
            }
            var progress = MultipartProgress(uploadID: row["uploadID"], url: row["url"], partSize: row["partSize"])
            for part in try Row.fetchAll(db, sql: "SELECT number, etag, checksum FROM multipart_part WHERE job = ?", arguments: [key]) {
                progress.parts[part["number"]] = .init(etag: part["etag"], checksum: part["checksum"])
            }
            return progress
        }
    }

    /// Records that the multipart upload `uploadID` of job `id` began, forgetting any earlier one
    /// of the job and its parts.
    package func beginMultipart(of id: String, uploadID: String, url: String, partSize: Int64) throws(StoreError) {
        let now = storeNow().storeMilliseconds
        try write("recording the multipart upload of job \(id.prefix(12))") { db in
            let key = StoredJobKey(id)
            try db.execute(sql: "DELETE FROM multipart_part WHERE job = ?", arguments: [key])
            try db.execute(
                sql: "INSERT OR REPLACE INTO multipart_upload (job, uploadID, url, partSize, createdAt) VALUES (?, ?, ?, ?, ?)",
                arguments: [key, uploadID, url, partSize, now]
            )
        }
    }

    /// Records part `number` of job `id`'s multipart upload as acknowledged by the store.
    package func recordPart(of id: String, number: Int, _ part: MultipartProgress.Part) async throws(StoreError) {
        let key = StoredJobKey(id)
        try await writeSuspending("recording part \(number) of job \(id.prefix(12))") { db in
            try db.execute(
                sql: "INSERT OR REPLACE INTO multipart_part (job, number, etag, checksum) VALUES (?, ?, ?, ?)",
                arguments: [key, number, part.etag, part.checksum]
            )
        }
    }

    /// Forgets job `id`'s multipart upload: completed, aborted, or forgotten by the store.
    package func endMultipart(of id: String) throws(StoreError) {
        try write("forgetting the multipart upload of job \(id.prefix(12))") { db in
            let key = StoredJobKey(id)
            try db.execute(sql: "DELETE FROM multipart_part WHERE job = ?", arguments: [key])
            try db.execute(sql: "DELETE FROM multipart_upload WHERE job = ?", arguments: [key])
        }
    }

    /// The multipart uploads whose job will not deliver them any more: its row gone, or in a
    /// state that ends without a delivery (discarded, dead letter, delivered by another way).
    package func abandonedMultipartUploads() throws(StoreError) -> [AbandonedMultipart] {
        try read("listing abandoned multipart uploads") { db in
            try Row.fetchAll(
                db,
                sql: """
                    SELECT m.job, m.uploadID, m.url FROM multipart_upload m
                    WHERE NOT EXISTS (SELECT 1 FROM job WHERE job.id = m.job AND job.state IN (?, ?, ?))
                    """,
                arguments: [JobState.queued.rawValue, JobState.inFlight.rawValue, JobState.parked.rawValue]
            ).map { row in
                AbandonedMultipart(jobID: (row["job"] as StoredJobKey).id, uploadID: row["uploadID"], url: row["url"])
            }
        }
    }
}
