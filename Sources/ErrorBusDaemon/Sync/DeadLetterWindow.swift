import DequeModule
import Foundation
import Synchronization

/// When sync set jobs aside as dead letters in the last hour, however they were set aside
/// (rejected by the API, too old, dropped for room) and whatever became of them since (retried,
/// discarded, pruned by the retention): what `health.dead-letters` counts.
///
/// Kept in memory, so it starts empty at each start; the health check also counts the dead
/// letters the store still keeps from the last hour, and takes the larger.
final class DeadLetterWindow: Sendable {
    /// How far back it counts.
    static let span: TimeInterval = 3_600
    /// At most this many instants are kept; beyond, the count stops growing (a burst of more
    /// than this is critical by any threshold anyway).
    static let capacity = 100_000

    private let instants = Mutex(Deque<Date>())

    /// `count` jobs were set aside now.
    func record(_ count: Int = 1, at now: Date = Date()) {
        guard count > 0 else { return }
        instants.withLock { instants in
            Self.forget(before: now, in: &instants)
            for _ in 0..<min(count, Self.capacity) {
                if instants.count == Self.capacity { instants.removeFirst() }
                instants.append(now)
            }
        }
    }

    /// How many were set aside in the last hour.
    func count(at now: Date = Date()) -> Int {
        instants.withLock { instants in
            Self.forget(before: now, in: &instants)
            return instants.count
        }
    }

    private static func forget(before now: Date, in instants: inout Deque<Date>) {
        let cut = now.addingTimeInterval(-span)
        while let first = instants.first, first < cut { instants.removeFirst() }
    }
}
