import DequeModule
import ErrorBus
import ErrorBusStore

/// The dispatcher's state in one value: the jobs claimed from the store and not started yet, the
/// first runs under way, the claim under way, whether an incident holds the queue back, the
/// pause while the bus's parking is full, and the outcomes the store could not record yet. Its
/// transitions are pure; ``SyncService`` does what they call for.
///
/// While an incident holds the service's jobs back, the bus parks what is handed to it, up to
/// ``parkedInMemory`` jobs; beyond that the store is the queue: nothing more is claimed or
/// started, and the jobs claimed go back to it. Memory follows that bound and the concurrency,
/// not the backlog.
struct DispatchState {
    /// Where the claim of queued jobs stands.
    enum Claim: Equatable {
        case idle
        case claiming
        /// The dispatcher was woken during the claim under way (new jobs may have been queued
        /// after it read the queue): claim again once it ends.
        case claimingAgain
    }

    /// At most this many first runs at once (`sync.concurrency`).
    var concurrency: Int
    /// At most this many jobs with the bus while an incident holds them back
    /// (`sync.parked-in-memory`).
    var parkedInMemory: Int
    /// Jobs claimed from the store, next to start.
    private(set) var pending = Deque<OutboxJob>()
    /// First runs under way in the service's own tasks (the bus runs released jobs).
    private(set) var running = 0
    private(set) var claim = Claim.idle
    /// An incident holds the service's jobs back: none is claimed or started.
    private(set) var isHeldBack = false
    /// While the bus's parking is full, no job starts before this instant.
    private(set) var pausedUntil: TimelineInstant?
    /// Whether a wake-up at ``pausedUntil`` has been asked for.
    private var resumeScheduled = false
    /// Jobs handed to the bus that the store has no outcome for yet: uploading, held by the bus,
    /// or waiting in ``unrecorded``. For the stop's log line; the store's claim is what keeps a
    /// job from being started twice.
    private(set) var held = 0
    /// What became of jobs whose outcome the store could not record (disk full, read-only),
    /// oldest first: recorded again at the next wake-up. Until then the job stays in flight in
    /// the store and its file in the outbox.
    /// `runs`: the uploads the job's submission made (an outcome counts them as attempts).
    var unrecorded: [(job: OutboxFile, outcome: JobOutcome, runs: Int)] = []
    /// Jobs whose first run ended with the bus holding them, and whose final outcome has not
    /// come back: parked, waiting for the retry budget, or being run again by the bus.
    private(set) var withTheBus = 0

    init(concurrency: Int, parkedInMemory: Int = DaemonConfiguration.Sync().parkedInMemory) {
        self.concurrency = concurrency
        self.parkedInMemory = parkedInMemory
    }

    /// Whether the bus may be handed another job: always, unless an incident holds the jobs back
    /// and the bus holds as many as it may (those starting count: the bus parks them).
    private var mayHandToBus: Bool {
        !isHeldBack || withTheBus + running < parkedInMemory
    }

    /// The next claimed job to start, if a slot is free and nothing holds new work back; it
    /// counts as running and held from here on.
    mutating func start(at now: TimelineInstant) -> OutboxJob? {
        guard running < concurrency, mayHandToBus else { return nil }
        if let until = pausedUntil {
            guard now >= until else { return nil }
            pausedUntil = nil
        }
        guard let job = pending.popFirst() else { return nil }
        running += 1
        held += 1
        return job
    }

    /// Whether to claim more queued jobs now: before the claimed ones run out, so that the next
    /// ones are at hand when a slot frees. One claim at a time; a wake-up during a claim asks for
    /// another once it ends.
    mutating func startsClaim() -> Bool {
        guard pending.count < 2 * concurrency, pausedUntil == nil, mayHandToBus else { return false }
        switch claim {
        case .idle:
            claim = .claiming
            return true
        case .claiming, .claimingAgain:
            claim = .claimingAgain
            return false
        }
    }

    /// An incident holds the service's jobs back (`true`), or no longer does. Returns the claimed
    /// jobs to give back to the store's queue, where they wait with the rest, once the bus holds
    /// as many as it may.
    mutating func heldBack(_ held: Bool) -> [OutboxJob] {
        isHeldBack = held
        guard !mayHandToBus, !pending.isEmpty else { return [] }
        defer { pending.removeAll() }
        return Array(pending)
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

    /// A first run ended: its slot is free.
    mutating func firstRunEnded() {
        running -= 1
    }

    /// A first run ended with the bus holding the job.
    mutating func handedToBus() {
        withTheBus += 1
    }

    /// The bus gave a job it held its final outcome.
    mutating func backFromBus() {
        withTheBus -= 1
    }

    /// The store recorded a held job's outcome.
    mutating func recorded() {
        held -= 1
    }

    /// The bus's parking is full: new jobs wait `pause`.
    mutating func parkingFull(at now: TimelineInstant, pause: Duration) {
        pausedUntil = now.advanced(by: pause)
        resumeScheduled = false
    }

    /// When to wake the dispatcher to end a pause, once per pause: nothing else may wake it
    /// before the next rescan.
    mutating func resumeToSchedule() -> TimelineInstant? {
        guard let pausedUntil, !resumeScheduled else { return nil }
        resumeScheduled = true
        return pausedUntil
    }
}
