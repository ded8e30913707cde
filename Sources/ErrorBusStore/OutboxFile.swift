package import Foundation

/// One file of the outbox as the job that uploads it: what ``JobStore/enqueue(_:)`` makes
/// durable, and what an upload needs (and all the bus keeps in memory for a parked job). The
/// stored job, with its state and history, is ``OutboxJob``.
package struct OutboxFile: Sendable, Hashable {
    /// The content's idempotency key: the hex SHA-256 of the file, computed by the caller.
    package var id: String
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

    package init(id: String, service: String, fileName: String, path: String, size: Int64) {
        self.id = id
        self.service = service
        self.fileName = fileName
        self.path = path
        self.size = size
    }

    /// The file of a stored job.
    package init(_ job: OutboxJob) {
        self.init(id: job.id, service: job.service, fileName: job.fileName, path: job.path, size: job.size)
    }
}
