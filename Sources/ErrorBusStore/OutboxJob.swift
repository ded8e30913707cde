package import Foundation
package import GRDB

/// A durable outbox job: one file to upload with `PUT /v1/items/{id}`, a row of the `job`
/// table (see ``StoreSchema``). Read as a record; the store writes jobs with SQL of its own.
package struct OutboxJob: Sendable, Equatable, FetchableRecord, TableRecord {
    package static let databaseTableName = "job"

    /// The job's key (``OutboxFile/id``). Unique in the store.
    package var id: String
    /// The content's SHA-256 when ``id`` is not it (``OutboxFile/digest``).
    package var digest: String?
    /// The service that owns the job, e.g. `"sync"`.
    package var service: String
    package var fileName: String
    package var path: String
    package var size: Int64
    package var state: JobState
    /// Uploads tried that the store recorded: each ``JobStore/markQueued(_:lastError:)`` and
    /// the delivery count one, ``JobStore/markDeadLettered(_:reason:incident:attempts:)`` the
    /// uploads its submission made (none for a job set aside before it was sent). (A failure
    /// that parked the job is its incident's to count.)
    package var attempts: Int
    /// What the last failed attempt met, for operators.
    package var lastError: String?
    /// The incident a parked job waits on, or the one a dead letter was set aside under (a job
    /// discarded from either state keeps it); `nil` otherwise.
    package var incident: UInt64?
    /// Whether the job, parked or taken back from its incident (``JobStore/takeParked(under:)``),
    /// ran and met the incident, rather than being held back behind it before it ran. Its
    /// incident takes the jobs that merely wait first. `false` in every other state.
    package var failedUnder: Bool
    /// Why the job was dead-lettered or discarded.
    package var reason: String?
    /// When the job was enqueued (millisecond precision, as stored).
    package var createdAt: Date
    /// When the job last changed.
    package var updatedAt: Date
    /// When the job was recorded delivered.
    package var deliveredAt: Date?
    /// How many times it failed on its own (``JobStore/markIsolated(_:ownFailures:)``); 0 for a
    /// job never set aside.
    package var ownFailures: Int

    package init(
        id: String,
        digest: String? = nil,
        service: String,
        fileName: String,
        path: String,
        size: Int64,
        state: JobState,
        attempts: Int = 0,
        lastError: String? = nil,
        incident: UInt64? = nil,
        failedUnder: Bool = false,
        reason: String? = nil,
        createdAt: Date,
        updatedAt: Date,
        deliveredAt: Date? = nil,
        ownFailures: Int = 0
    ) {
        self.id = id
        self.digest = digest
        self.service = service
        self.fileName = fileName
        self.path = path
        self.size = size
        self.state = state
        self.attempts = attempts
        self.lastError = lastError
        self.incident = incident
        self.failedUnder = failedUnder
        self.reason = reason
        self.createdAt = createdAt
        self.updatedAt = updatedAt
        self.deliveredAt = deliveredAt
        self.ownFailures = ownFailures
    }

    /// Read by column name, without `Decodable`: a claim decodes every job it takes, and GRDB's
    /// record decoder took nearly half of the claim's time.
    package init(row: Row) throws {
        id = try row.decode(StoredJobKey.self, forColumn: "id").id
        digest = try row.decode(forColumn: "digest")
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
        failedUnder = try row.decode(forColumn: "failedUnder")
        reason = try row.decode(forColumn: "reason")
        createdAt = Date(storeMilliseconds: try row.decode(forColumn: "createdAt"))
        updatedAt = Date(storeMilliseconds: try row.decode(forColumn: "updatedAt"))
        deliveredAt = try row.decode(Int64?.self, forColumn: "deliveredAt").map(Date.init(storeMilliseconds:))
        ownFailures = try row.decode(forColumn: "ownFailures")
    }
}
