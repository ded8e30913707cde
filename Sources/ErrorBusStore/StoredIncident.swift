public import ErrorBus
public import Foundation
public import GRDB

/// An incident as the store keeps it, a row of the `incident` table (see ``StoreSchema``): the
/// bus's snapshot as last recorded, kept after the bus forgot it and across restarts
/// (``JobStore/recordIncident(_:at:)``).
public struct StoredIncident: Sendable, Equatable, Identifiable, Codable, FetchableRecord, PersistableRecord {
    public static let databaseTableName = "incident"

    /// The incident's id (``IncidentID/rawValue``).
    public var id: UInt64
    /// The service whose failure opened it.
    public var service: String
    /// The category's kind, e.g. `"unreachable"` (``ErrorCategory/Kind``'s raw value).
    public var category: String
    /// The category as last seen, with its details, e.g. `"rateLimited(retryAfter: 30.0 seconds)"`.
    public var categoryDetail: String
    /// The fingerprint's scope (a host, a realm, a service).
    public var scope: String
    /// The fingerprint's cause, e.g. `"connectionRefused"`.
    public var cause: String
    /// What an operator reads: title, message, next step.
    public var title: String
    public var message: String
    public var next: String?
    public var state: IncidentState
    public var failures: Int
    /// Jobs parked under it when it was last recorded.
    public var parked: Int
    public var released: Int
    public var deadLettered: Int
    public var resolution: Resolution?
    /// When it opened (wall clock), as the bus recorded it.
    public var openedAt: Date
    /// When it was last recorded.
    public var updatedAt: Date
    /// When it ended (wall clock), as the bus recorded it; or when a later run of errorbusd
    /// closed it (``JobStore/closeOpenIncidents(as:at:)``).
    public var closedAt: Date?

    /// Dates are INTEGER milliseconds since 1970, as everywhere in the store.
    public static func databaseDateEncodingStrategy(for column: String) -> DatabaseDateEncodingStrategy {
        StoreDateCoding.encoding
    }

    public static func databaseDateDecodingStrategy(for column: String) -> DatabaseDateDecodingStrategy {
        StoreDateCoding.decoding
    }

    /// An incident as the bus holds it, recorded at `updatedAt`. Times are whole milliseconds,
    /// as stored, so that what a caller is given equals what it reads back.
    public init(_ snapshot: IncidentSnapshot, updatedAt: Date = Date()) {
        self.id = snapshot.id.rawValue
        self.service = snapshot.service
        self.category = snapshot.category.kind.rawValue
        self.categoryDetail = snapshot.category.description
        self.scope = snapshot.fingerprint.scope
        self.cause = snapshot.fingerprint.cause
        self.title = snapshot.text.title
        self.message = snapshot.text.message
        self.next = snapshot.text.next
        self.state = snapshot.state
        self.failures = snapshot.failures
        self.parked = snapshot.parked
        self.released = snapshot.released
        self.deadLettered = snapshot.deadLettered
        self.resolution = snapshot.resolution
        self.openedAt = Date(storeMilliseconds: snapshot.openedAt.storeMilliseconds)
        self.updatedAt = Date(storeMilliseconds: updatedAt.storeMilliseconds)
        self.closedAt = snapshot.closedAt.map { Date(storeMilliseconds: $0.storeMilliseconds) }
    }
}
