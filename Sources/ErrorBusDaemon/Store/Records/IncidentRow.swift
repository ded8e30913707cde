import ErrorBus
import Foundation
import GRDB

/// A row of the `incident` table (see ``StoreSchema``). The public face is ``StoredIncident``.
struct IncidentRow: Codable, FetchableRecord, PersistableRecord, StoreDates {
    static let databaseTableName = "incident"

    var id: UInt64
    var service: String
    var category: String
    var categoryDetail: String
    var scope: String
    var cause: String
    var title: String
    var message: String
    var next: String?
    var state: String
    var failures: Int
    var parked: Int
    var released: Int
    var deadLettered: Int
    var resolution: String?
    var openedAt: Date
    var updatedAt: Date
    var closedAt: Date?

    /// The row for `snapshot`, recorded at `now`; `openedAt` is the first record's, when there
    /// was one.
    init(_ snapshot: IncidentSnapshot, openedAt: Date?, now: Date) {
        let opened = openedAt ?? now.addingTimeInterval(-snapshot.age.timeInterval)
        self.id = snapshot.id.rawValue
        self.service = snapshot.service
        self.category = snapshot.category.kind.rawValue
        self.categoryDetail = snapshot.category.description
        self.scope = snapshot.fingerprint.scope
        self.cause = snapshot.fingerprint.cause
        self.title = snapshot.text.title
        self.message = snapshot.text.message
        self.next = snapshot.text.next
        self.state = snapshot.state.rawValue
        self.failures = snapshot.failures
        self.parked = snapshot.parked
        self.released = snapshot.released
        self.deadLettered = snapshot.deadLettered
        self.resolution = snapshot.resolution?.rawValue
        // Whole milliseconds, as stored, so that what a caller is given equals what it reads.
        self.openedAt = Date(storeMilliseconds: opened.storeMilliseconds)
        self.updatedAt = Date(storeMilliseconds: now.storeMilliseconds)
        self.closedAt =
            snapshot.resolution == nil
            ? nil : Date(storeMilliseconds: opened.addingTimeInterval(snapshot.age.timeInterval).storeMilliseconds)
    }

    var incident: StoredIncident {
        StoredIncident(
            id: id,
            service: service,
            category: category,
            categoryDetail: categoryDetail,
            scope: scope,
            cause: cause,
            title: title,
            message: message,
            next: next,
            state: IncidentState(rawValue: state),
            failures: failures,
            parked: parked,
            released: released,
            deadLettered: deadLettered,
            resolution: resolution.map(Resolution.init(rawValue:)),
            openedAt: openedAt,
            updatedAt: updatedAt,
            closedAt: closedAt
        )
    }
}
