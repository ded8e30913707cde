public import ErrorBus
public import Foundation

/// An incident as the store keeps it: the bus's snapshot with wall-clock times, kept after the
/// bus forgot it (``JobStore/recordIncident(_:at:)``).
public struct StoredIncident: Sendable, Equatable, Identifiable {
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
    /// When it opened (wall clock), fixed by its first record.
    public var openedAt: Date
    /// When it was last recorded.
    public var updatedAt: Date
    /// When it ended: ``openedAt`` plus the resolved snapshot's age.
    public var closedAt: Date?

    public init(
        id: UInt64,
        service: String,
        category: String,
        categoryDetail: String,
        scope: String,
        cause: String,
        title: String,
        message: String,
        next: String?,
        state: IncidentState,
        failures: Int,
        parked: Int,
        released: Int,
        deadLettered: Int,
        resolution: Resolution?,
        openedAt: Date,
        updatedAt: Date,
        closedAt: Date?
    ) {
        self.id = id
        self.service = service
        self.category = category
        self.categoryDetail = categoryDetail
        self.scope = scope
        self.cause = cause
        self.title = title
        self.message = message
        self.next = next
        self.state = state
        self.failures = failures
        self.parked = parked
        self.released = released
        self.deadLettered = deadLettered
        self.resolution = resolution
        self.openedAt = openedAt
        self.updatedAt = updatedAt
        self.closedAt = closedAt
    }
}
