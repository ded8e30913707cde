import Synchronization

/// The completions ``JobStore/markDelivered(_:)`` is waiting to commit (group commit).
///
/// The first completion that finds no commit scheduled schedules one on the database's writer
/// queue; every completion arriving until that commit starts joins it. So under load a batch
/// holds whatever arrived while the previous transaction ran, and an isolated completion is
/// committed at once, without waiting for a timer.
final class DeliveryBatcher: Sendable {
    /// One caller waiting for its job to be recorded delivered.
    struct Waiter: Sendable {
        var id: String
        /// Resumed with whether the job changed state, once the batch committed or failed.
        var continuation: CheckedContinuation<Result<Bool, StoreError>, Never>
    }

    private struct State {
        var waiting: [Waiter] = []
        var commitScheduled = false
        var statistics = DeliveryStatistics()
    }

    private let state = Mutex(State())

    /// Adds a waiter; `true` when the caller must schedule a commit.
    func add(_ waiter: Waiter) -> Bool {
        state.withLock { state in
            state.waiting.append(waiter)
            if state.commitScheduled { return false }
            state.commitScheduled = true
            return true
        }
    }

    /// Takes every waiter for the commit that is starting; later arrivals schedule the next one.
    func takeBatch() -> [Waiter] {
        state.withLock { state in
            state.commitScheduled = false
            defer { state.waiting = [] }
            return state.waiting
        }
    }

    /// Counts a committed batch.
    func committed(_ count: Int) {
        state.withLock { state in
            state.statistics.transactions += 1
            state.statistics.completions += count
            state.statistics.largestBatch = max(state.statistics.largestBatch, count)
        }
    }

    /// Completions waiting for a commit.
    var waitingCount: Int { state.withLock { $0.waiting.count } }

    var statistics: DeliveryStatistics { state.withLock { $0.statistics } }
}
