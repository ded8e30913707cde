package import ErrorBus
package import Foundation
package import GRDB

/// An incident as the store keeps it, a row of the `incident` table (see ``StoreSchema``): the
/// bus's snapshot as last recorded, kept after the bus forgot it and across restarts
/// (``JobStore/recordIncident(_:at:)``).
package struct StoredIncident: Sendable, Equatable, Identifiable, Codable, FetchableRecord, PersistableRecord {
    package static let databaseTableName = "incident"

    /// The incident's id (``IncidentID/rawValue``).
    package var id: UInt64
    /// Its UUID (``IncidentSnapshot/uuid``), lower-case: unique across hosts and runs; `nil` for
    /// an incident recorded by an errorbusd that did not know them (0.2.0 and earlier).
    package var uuid: String?
    /// The service whose failure opened it.
    package var service: String
    /// The category's kind, e.g. `"unreachable"` (``ErrorCategory/Kind``'s raw value).
    package var category: String
    /// The category as last seen, with its details, e.g. `"rateLimited(retryAfter: 30.0 seconds)"`.
    package var categoryDetail: String
    /// The fingerprint's scope (a host, a realm, a service).
    package var scope: String
    /// The fingerprint's cause, e.g. `"connectionRefused"`.
    package var cause: String
    /// What an operator reads: title, message, next step.
    package var title: String
    package var message: String
    package var next: String?
    package var state: IncidentState
    package var failures: Int
    /// Jobs parked under it when it was last recorded.
    package var parked: Int
    package var released: Int
    package var deadLettered: Int
    package var resolution: Resolution?
    /// When it opened (wall clock), as the bus recorded it.
    package var openedAt: Date
    /// When it was last recorded.
    package var updatedAt: Date
    /// When it ended (wall clock), as the bus recorded it; or when a later run of errorbusd
    /// closed it (``JobStore/closeOpenIncidents(as:at:)``).
    package var closedAt: Date?

    /// Dates are INTEGER milliseconds since 1970, as everywhere in the store.
    package static func databaseDateEncodingStrategy(for column: String) -> DatabaseDateEncodingStrategy {
        StoreDateCoding.encoding
    }

    package static func databaseDateDecodingStrategy(for column: String) -> DatabaseDateDecodingStrategy {
        StoreDateCoding.decoding
    }

    /// An incident as the bus holds it, recorded at `updatedAt`. Times are whole milliseconds,
    /// as stored, so that what a caller is given equals what it reads back.
    package init(_ snapshot: IncidentSnapshot, updatedAt: Date = Date()) {
        self.id = snapshot.id.rawValue
        self.uuid = snapshot.uuid.uuidString.lowercased()
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
