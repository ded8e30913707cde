import Foundation
import Synchronization

/// When sync last delivered a file, and when it started: what `health.not-delivering` measures
/// from. Kept in memory; a start counts as a delivery, so that a restart with a backlog is not
/// "not delivering" before it had a chance.
final class DeliveryProgress: Sendable {
    private let last: Mutex<Date>

    init(startedAt: Date = Date()) {
        last = Mutex(startedAt)
    }

    /// A file was delivered now.
    func record(at now: Date = Date()) {
        last.withLock { $0 = max($0, now) }
    }

    /// The last delivery, or the start if none came since.
    var lastDelivery: Date { last.withLock { $0 } }
}
