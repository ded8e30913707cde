import DequeModule
import ErrorBus
import ErrorBusStore

/// The dispatcher's state in one value: the jobs claimed from the store and not started yet, the
/// uploads under way, the claim under way, and the verdicts the store could not record yet. Its
/// transitions are pure; ``SyncService`` does what they call for.
///
/// Memory follows the concurrency, not the backlog: the store is the queue, and a job waiting on
/// an incident is a `parked` row in it.
struct DispatchState {
    /// Where the claim of queued jobs stands.
    enum Claim: Equatable {
        case idle
        case claiming
        /// The dispatcher was woken during the claim under way (new jobs may have been queued
        /// after it read the queue): claim again once it ends.
        case claimingAgain
    }

    /// At most this many uploads at once (`sync.concurrency`).
    var concurrency: Int
    /// Jobs claimed from the store, next to start.
    private(set) var pending = Deque<OutboxJob>()
    /// Uploads under way (canaries excluded: the bus asks for those).
    private(set) var running = 0
    private(set) var claim = Claim.idle
    /// Verdicts the store could not record (disk full, read-only), oldest first: recorded again
    /// at the next wake-up. Until then the job stays in flight in the store and its file in the
    /// outbox. `runs`: the uploads the run made (a verdict counts them as attempts).
    var unrecorded: [(job: OutboxFile, verdict: Verdict, runs: Int)] = []

    /// When jobs their scope paced may be claimed again (`retryAt` in the store), and the one
    /// wake-up armed for the soonest.
    private var retries: [TimelineInstant] = []
    private var retryWakeArmed: TimelineInstant?

    init(concurrency: Int) {
        self.concurrency = concurrency
    }

    /// The next claimed job to start, if a slot is free; it counts as running from here on.
    mutating func start() -> OutboxJob? {
        guard running < concurrency, let job = pending.popFirst() else { return nil }
        running += 1
        return job
    }

    /// Whether to claim more queued jobs now: before the claimed ones run out, so that the next
    /// ones are at hand when a slot frees. One claim at a time; a wake-up during a claim asks
    /// for another once it ends. (While an incident holds the uploads back, the dispatcher
    /// claims none: it parks the queue under it.)
    mutating func startsClaim() -> Bool {
        guard pending.count < 2 * concurrency else { return false }
        switch claim {
        case .idle:
            claim = .claiming
            return true
        case .claiming, .claimingAgain:
            claim = .claimingAgain
            return false
        }
    }

    /// Takes the oldest claimed job that has not started, to set it aside (the backlog's
    /// `drop-oldest`).
    mutating func dropPending() -> OutboxJob? {
        pending.popFirst()
    }

    /// How many queued jobs one claim takes.
    var claimLimit: Int { 4 * concurrency }

    /// A claim ended with `jobs` (none when it failed). Returns whether to wake the dispatcher:
    /// there is something to start, or another claim was asked for meanwhile.
    mutating func claimed(_ jobs: [OutboxJob]) -> Bool {
        pending.append(contentsOf: jobs)
        let again = claim == .claimingAgain
        claim = .idle
        return !jobs.isEmpty || again
    }

    /// A job its scope paced is queued again, to be claimed no sooner than `instant`.
    mutating func retry(at instant: TimelineInstant) {
        retries.append(instant)
    }

    /// When to wake the dispatcher for the soonest paced job, unless a wake-up is armed as soon;
    /// those due by `now` are forgotten (the claim about to run takes them).
    mutating func retryWake(at now: TimelineInstant) -> TimelineInstant? {
        retries.removeAll { $0 <= now }
        if let armed = retryWakeArmed, armed <= now { retryWakeArmed = nil }
        guard let soonest = retries.min(), retryWakeArmed.map({ soonest < $0 }) ?? true else { return nil }
        retryWakeArmed = soonest
        return soonest
    }

    /// An upload ended: its slot is free.
    mutating func uploadEnded() {
        running -= 1
    }
}
