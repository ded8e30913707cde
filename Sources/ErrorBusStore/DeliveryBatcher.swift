import Synchronization

/// The completions ``JobStore/markDelivered(_:)`` is waiting to commit (group commit).
///
/// The first completion that finds no commit scheduled schedules one, `gatherTime` later; every
/// completion arriving until that commit starts joins it. A batch that reaches `limit` is
/// committed at once. So one transaction records the completions of a few milliseconds, and
/// a burst never waits for the timer.
final class DeliveryBatcher: Sendable {
    /// One caller waiting for its job to be recorded delivered.
    struct Waiter: Sendable {
        var id: String
        /// Resumed with whether the job changed state, once the batch committed or failed.
        var continuation: CheckedContinuation<Result<Bool, StoreError>, Never>
    }

    /// What the caller of ``add(_:)`` must schedule.
    enum Schedule: Equatable {
        /// Nothing: a scheduled commit will take the waiter.
        case none
        /// A commit after the gather time.
        case later
        /// A commit now: the batch is full.
        case now
    }

    /// How long the first completion of a batch waits for others.
    let gatherTime: Duration
    /// The most completions a batch gathers before it is committed without waiting.
    let limit: Int

    init(gatherTime: Duration, limit: Int = 64) {
        self.gatherTime = gatherTime
        self.limit = limit
    }

    private struct State {
        var waiting: [Waiter] = []
        var commitScheduled = false
        var fullBatchScheduled = false
        var statistics = DeliveryStatistics()
    }

    private let state = Mutex(State())

    /// Adds a waiter, and says which commit, if any, the caller must schedule for it.
    func add(_ waiter: Waiter) -> Schedule {
        state.withLock { state in
            state.waiting.append(waiter)
            if !state.commitScheduled {
                state.commitScheduled = true
                return gatherTime > .zero ? .later : .now
            }
            if state.waiting.count >= limit && !state.fullBatchScheduled {
                state.fullBatchScheduled = true
                return .now
            }
            return .none
        }
    }

    /// Takes every waiter for the commit that is starting; later arrivals schedule the next one.
    /// A commit scheduled earlier that runs after this one finds what arrived since, or nothing.
    func takeBatch() -> [Waiter] {
        state.withLock { state in
            state.commitScheduled = false
            state.fullBatchScheduled = false
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
