import DequeModule

/// What the bus remembers of the failed runs of jobs kept in durable queues
/// (``ErrorBus/run(_:operation:)``): the evidence that tells a job's own failures from its
/// scope's (``ErrorBusConfiguration/Isolation``), which a job the bus holds carries in its
/// command from one run to the next. Kept for a job from its first failed run until it succeeds
/// or stops, for at most ``capacity`` jobs (the oldest forgotten first: its evidence starts
/// again). Jobs that never failed cost nothing: an outage's backlog is held back, not run.
struct DurableFailures {
    /// The failed runs of one job.
    struct History {
        var failedRuns: Int
        var evidence: Double
        var freshFailure: UInt64?
        var successesAtLastFailure: UInt64?
        var ownFailures: Int
    }

    struct Key: Hashable {
        var service: String
        var id: String
    }

    static let capacity = 10_000

    private var histories: [Key: History] = [:]
    /// Insertion order, for forgetting the oldest; a key may appear again after it was removed.
    private var order = Deque<Key>()

    /// Gives `command` what its job's earlier runs found.
    func restore(_ command: inout Command) {
        guard let history = histories[Key(service: command.job.service, id: command.job.id)] else { return }
        command.failedRuns = history.failedRuns
        command.evidence = history.evidence
        command.freshFailure = history.freshFailure
        command.successesAtLastFailure = history.successesAtLastFailure
        command.ownFailures = history.ownFailures
    }

    /// Keeps what a failed run of `command` found, for its job's next run.
    mutating func save(_ command: Command) {
        let key = Key(service: command.job.service, id: command.job.id)
        if histories[key] == nil { order.append(key) }
        histories[key] = History(
            failedRuns: command.failedRuns,
            evidence: command.evidence,
            freshFailure: command.freshFailure,
            successesAtLastFailure: command.successesAtLastFailure,
            ownFailures: command.ownFailures
        )
        while histories.count > Self.capacity, let oldest = order.popFirst() {
            histories[oldest] = nil
        }
    }

    /// The job succeeded or stopped: nothing of its failures matters any more.
    mutating func forget(_ job: Job) {
        histories[Key(service: job.service, id: job.id)] = nil
        if order.count > 2 * Self.capacity {
            order = Deque(order.filter { histories[$0] != nil })
        }
    }

    var count: Int { histories.count }
}
