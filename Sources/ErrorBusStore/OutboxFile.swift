package import Foundation

/// One file of the outbox as the job that uploads it: what ``JobStore/enqueue(_:)`` makes
/// durable, and what an upload needs (and all the bus keeps in memory for a parked job). The
/// stored job, with its state and history, is ``OutboxJob``.
package struct OutboxFile: Sendable, Hashable {
    /// The job's key, unique in the store: the hex SHA-256 of the file's content (computed by the
    /// caller), or, for an API that tells files by name, of that digest and the name (``digest``
    /// holds the content's then).
    package var id: String
    /// The content's SHA-256 when ``id`` is not it; `nil` when it is.
    package var digest: String?
    /// The service that owns the job, e.g. `"sync"`.
    package var service: String
    /// The file's name, e.g. `"report-42.json"`.
    package var fileName: String
    /// The file's full path.
    package var path: String
    /// The file's size in bytes.
    package var size: Int64
    /// When it arrived, if before it is queued (a file that waited in the outbox for room in the
    /// backlog): the job's `createdAt`. `nil`: now.
    package var arrivedAt: Date?
    /// When its file was last written, as the ingest saw it, in nanoseconds since the epoch;
    /// `nil`: unknown. Stored with the job: a rescan that finds the file with this size and time
    /// knows it is taken care of (``JobStore/knownFiles(service:named:)``).
    package var modifiedNanoseconds: Int64?

    /// When its file was last written, as the ingest saw it; `nil`: unknown. Content an operator
    /// discarded comes back as a new job when it arrives in another file, or in this one written
    /// after the discard (``JobStore/enqueue(_:)``).
    package var modifiedAt: Date? {
        get { modifiedNanoseconds.map { Date(timeIntervalSince1970: Double($0) / 1e9) } }
        set { modifiedNanoseconds = newValue.map { Int64(($0.timeIntervalSince1970 * 1e9).rounded()) } }
    }

    package init(id: String, digest: String? = nil, service: String, fileName: String, path: String, size: Int64) {
        self.id = id
        self.digest = digest
        self.service = service
        self.fileName = fileName
        self.path = path
        self.size = size
    }

    /// The file of a stored job.
    package init(_ job: OutboxJob) {
        self.init(id: job.id, digest: job.digest, service: job.service, fileName: job.fileName, path: job.path, size: job.size)
    }

    /// The content's SHA-256 (hex).
    package var sha256: String { digest ?? id }
}
