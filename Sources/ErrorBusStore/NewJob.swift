/// A file found in the outbox, to be made a durable job by ``JobStore/enqueue(_:)``.
public struct NewJob: Sendable, Hashable {
    /// The content's idempotency key: the hex SHA-256 of the file, computed by the caller.
    public var id: String
    /// The service that owns the job, e.g. `"sync"`.
    public var service: String
    /// The file's name, e.g. `"report-42.json"`.
    public var fileName: String
    /// The file's full path.
    public var path: String
    /// The file's size in bytes.
    public var size: Int64

    public init(id: String, service: String, fileName: String, path: String, size: Int64) {
        self.id = id
        self.service = service
        self.fileName = fileName
        self.path = path
        self.size = size
    }
}
