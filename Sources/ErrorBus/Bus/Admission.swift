import DequeModule

/// Whether a job may start now, decided without a hop to the actor: nothing holds its scope,
/// realm or service back, and its scope has a free concurrency slot and, when its rate is
/// limited, a token.
///
/// The held keys and the lifecycle mirror the actor's state (written only by the actor, under
/// the lock); the slots are owned here: each scope's ``ConcurrencyLimit`` and ``AdaptiveRate``,
/// the runs waiting for one of its slots, oldest first, and the pause a server's rate-limit fields
/// asked for. So are what each service's runs at a scope came to (``ScopeOutcomes``), which the
/// bus asks when a job fails: successes are recorded here as their slots are given back, without
/// a hop to the actor.
struct Admission: Sendable {
    var held: Set<HoldKey> = []
    private(set) var stopped = false
    private var scopes: [String: Scope] = [:]
    private let concurrency: ErrorBusConfiguration.Concurrency
    private let pacing: ErrorBusConfiguration.Pacing

    struct Scope: Sendable {
        var limit: ConcurrencyLimit<TimelineInstant>
        var rate: AdaptiveRate<TimelineInstant>
        var waiting = Deque<Waiter>()
        /// No slot is given out before this (a server said its quota is spent).
        var pausedUntil: TimelineInstant?
        /// When the timer that hands out the slots a rate or a pause withholds is armed for.
        var wakeAt: TimelineInstant?
        /// What each service's runs came to.
        var outcomes: [String: ScopeOutcomes] = [:]
    }

    /// A run waiting for a slot.
    struct Waiter: Sendable {
        let serial: UInt64
        let job: Job
        /// Whether it runs a job again (released, retried): those go before first runs, which
        /// arrived later.
        var isRetry = false
        let continuation: CheckedContinuation<SlotGrant, Never>
    }

    /// How a run that held a slot ended, as the scope's limits learn from it.
    struct Ending: Sendable {
        var outcome: ConcurrencyLimit<TimelineInstant>.Outcome
        /// When the run started: a refusal of a run that started before the rate's last cut says
        /// nothing new.
        var startedAt: TimelineInstant
        /// Whether it was a fresh run (``ScopeOutcomes``).
        var fresh: Bool
        /// Whether it counts in the scope's outcomes: not when its job is set aside on its own.
        var counts: Bool
        /// Whether the scope's limits learn from it: not when its job is set aside on its own, or
        /// its failures nearly single it out.
        var teaches: Bool
        /// The number of its job's fresh run that failed, when its failures since nearly single
        /// it out (``ScopeOutcomes/suspect(freshRun:)``): a success clears it.
        var suspected: UInt64? = nil
        /// Whether its slot was lent (``lend(_:at:)``).
        var lent = false
    }

    init(concurrency: ErrorBusConfiguration.Concurrency, pacing: ErrorBusConfiguration.Pacing) {
        self.concurrency = concurrency
        self.pacing = pacing
    }

    /// Whether a job may run without asking the bus: nothing holds any of its keys.
    func mayRun(_ job: Job) -> Bool {
        guard !stopped else { return false }
        guard !held.isEmpty else { return true }
        if held.contains(.scope(job.scope)) || held.contains(.service(job.service)) { return false }
        if held.contains(.serviceAtScope(service: job.service, scope: job.scope)) { return false }
        if let realm = job.realm, held.contains(.realm(realm)) { return false }
        return true
    }

    /// Takes a slot for a run of `job` now (`.granted`), or tells it to ask the bus because
    /// something holds it back (`.ask`); `nil`: it must wait, and ``wait(_:)`` queues it. When
    /// its scope's rate or pause withholds the slot, `wake` is when to hand out slots again, if
    /// no timer is armed for then yet.
    mutating func enter(_ job: Job, at now: TimelineInstant) -> (grant: SlotGrant?, wake: TimelineInstant?) {
        guard mayRun(job) else { return (.ask, nil) }
        return withScope(job.scope) { scope in
            // Whoever waits already goes first.
            guard scope.waiting.isEmpty else { return (nil, nil) }
            switch scope.take(at: now) {
            case .taken: return (.granted, nil)
            case .full: return (nil, nil)
            case .due(let due): return (nil, scope.arm(due))
            }
        }
    }

    /// Queues a run for the next free slot of its scope: a job run again after the other jobs
    /// run again, before every first run.
    mutating func wait(_ waiter: Waiter) {
        withScope(waiter.job.scope) { scope in
            guard waiter.isRetry, let firstRun = scope.waiting.firstIndex(where: { !$0.isRetry }) else {
                scope.waiting.append(waiter)
                return
            }
            scope.waiting.insert(waiter, at: firstRun)
        }
    }

    /// Takes a waiting run out of the queue (its task was cancelled); `nil` when a slot or an
    /// answer was already handed to it.
    mutating func withdraw(serial: UInt64, scope: String) -> Waiter? {
        guard let index = scopes[scope]?.waiting.firstIndex(where: { $0.serial == serial }) else { return nil }
        return scopes[scope]?.waiting.remove(at: index)
    }

    /// Gives back a run's slot with what the run came to, and hands free slots to the runs
    /// waiting: the caller resumes them, outside the lock, and arms a timer for `wake`, if any.
    mutating func release(_ job: Job, _ ending: Ending, at now: TimelineInstant) -> (answers: [(Waiter, SlotGrant)], wake: TimelineInstant?) {
        withScope(job.scope) { scope in
            if ending.counts, case .success = ending.outcome {
                scope.outcomes[job.service, default: ScopeOutcomes()].succeeded(fresh: ending.fresh)
                if let suspected = ending.suspected { scope.outcomes[job.service]?.clear(freshRun: suspected) }
            }
            guard ending.teaches else {
                scope.limit.release(.other, at: now, lent: ending.lent)
                return
            }
            var outcome = ending.outcome
            if case .backPressure = outcome, scope.outcomes[job.service]?.serves == true {
                // A failure that passes while the scope serves others (one bad backend of
                // several, a share of 5xx) says nothing of load: what the scope can take shows
                // in the latency of what succeeds, and in its refusals.
                outcome = .other
            }
            // A refusal while answers come slow is a queue overflowing (a few workers behind a
            // short queue): the concurrency limit answers it; the rate is cut only for a
            // refusal that no queue explains (a rate, a quota).
            let queueing = scope.limit.isQueueing
            scope.limit.release(outcome, at: now, lent: ending.lent)
            switch ending.outcome {
            case .success: scope.rate.succeeded(at: now)
            case .overloaded where queueing: scope.rate.answered(at: now)
            case .overloaded: scope.rate.refused(sentAt: ending.startedAt, at: now)
            case .backPressure, .other: scope.rate.answered(at: now)
            }
        }
        return admitWaiting(job.scope, at: now)
    }

    /// Lends the slot a run of `job` holds (``ConcurrencyLimit/lend()``), and hands the slots
    /// that frees to the runs waiting: the caller resumes them, outside the lock.
    mutating func lend(_ job: Job, at now: TimelineInstant) -> (answers: [(Waiter, SlotGrant)], wake: TimelineInstant?) {
        withScope(job.scope) { $0.limit.lend() }
        return admitWaiting(job.scope, at: now)
    }

    /// Learns from a successful run that held no slot (a canary): its latency calibrates the
    /// scope's limit, and it counts as the scope serving when it `counts`.
    mutating func calibrate(_ job: Job, with latency: Duration, fresh: Bool, counts: Bool, suspected: UInt64? = nil) {
        withScope(job.scope) { scope in
            scope.limit.calibrate(latency)
            guard counts else { return }
            scope.outcomes[job.service, default: ScopeOutcomes()].succeeded(fresh: fresh)
            if let suspected { scope.outcomes[job.service]?.clear(freshRun: suspected) }
        }
    }

    /// Records a failure of a run of `job` that may be its scope's (`unreachable`, `transient`,
    /// `rateLimited`), and returns what the service's runs at the scope now say.
    mutating func failed(_ job: Job, fresh: Bool, cause: String) -> (outcomes: ScopeOutcomes, freshRun: UInt64?) {
        withScope(job.scope) { scope in
            let number = scope.outcomes[job.service, default: ScopeOutcomes()].failed(fresh: fresh, cause: cause, job: job.id.hashValue)
            return (scope.outcomes[job.service]!, number)
        }
    }

    /// The job whose fresh run `freshRun` failed is nearly singled out by its failures since
    /// (``ScopeOutcomes/suspect(freshRun:)``).
    mutating func suspect(_ job: Job, freshRun: UInt64) {
        withScope(job.scope) { $0.outcomes[job.service]?.suspect(freshRun: freshRun) }
    }

    /// What `service`'s runs at `scope` came to lately.
    func outcomes(of service: String, at scope: String) -> ScopeOutcomes {
        scopes[scope]?.outcomes[service] ?? ScopeOutcomes()
    }

    /// Teaches a scope's rate what the scope said of its quota.
    mutating func quota(_ scope: String, remaining: Int, reset: Duration, at now: TimelineInstant) {
        withScope(scope) { $0.rate.quota(remaining: remaining, reset: reset, at: now) }
    }

    /// Hands free slots of a scope to the runs waiting for them, oldest first; a run that
    /// something holds back now is told to ask the bus instead. `wake`: when to try again, for
    /// the slots the scope's rate or pause withholds now, if no timer is armed for then yet.
    mutating func admitWaiting(_ scope: String, at now: TimelineInstant) -> (answers: [(Waiter, SlotGrant)], wake: TimelineInstant?) {
        // Taken out while it is worked on, so that `mayRun` can read the rest.
        guard var slots = scopes.removeValue(forKey: scope) else { return ([], nil) }
        defer { scopes[scope] = slots }
        if let armed = slots.wakeAt, armed <= now { slots.wakeAt = nil }
        var answers: [(Waiter, SlotGrant)] = []
        while let waiter = slots.waiting.first {
            if !mayRun(waiter.job) {
                answers.append((waiter, .ask))
            } else {
                switch slots.take(at: now) {
                case .taken:
                    answers.append((waiter, .granted))
                case .full:
                    return (answers, nil)
                case .due(let due):
                    return (answers, slots.arm(due))
                }
            }
            slots.waiting.removeFirst()
        }
        return (answers, nil)
    }

    /// No slot of `scope` is given out before `until`.
    mutating func pause(_ scope: String, until: TimelineInstant) {
        withScope(scope) { slots in
            slots.pausedUntil = max(slots.pausedUntil ?? until, until)
        }
    }

    /// A key is held now: a held scope's limit stops growing, and the runs waiting for its
    /// slots that the key holds back go to park instead.
    mutating func hold(_ key: HoldKey, at now: TimelineInstant) -> [Waiter] {
        held.insert(key)
        guard let scope = key.scope, scopes[scope] != nil else { return [] }
        return withScope(scope) { slots in
            slots.limit.hold()
            slots.rate.hold(at: now)
            var turnedAway: [Waiter] = []
            slots.waiting.removeAll { waiter in
                guard key.holds(waiter.job) else { return false }
                turnedAway.append(waiter)
                return true
            }
            return turnedAway
        }
    }

    /// A key is no longer held: a scope's limit starts slow again once nothing holds it.
    mutating func unhold(_ key: HoldKey, at now: TimelineInstant) {
        held.remove(key)
        guard let scope = key.scope, scopes[scope] != nil, !isHeld(scope) else { return }
        withScope(scope) {
            $0.limit.resume()
            $0.rate.resume(at: now)
        }
    }

    /// Whether some key holds (some of) the scope's jobs back.
    private func isHeld(_ scope: String) -> Bool {
        held.contains { $0.scope == scope }
    }

    /// The bus stopped: every waiting run goes to ask it, and hears so.
    mutating func stop() -> [Waiter] {
        stopped = true
        var waiters: [Waiter] = []
        for key in scopes.keys {
            waiters += scopes[key]!.waiting
            scopes[key]!.waiting.removeAll()
        }
        return waiters
    }

    /// What each service's latest runs at each scope came to, for a snapshot.
    var refusals: [ScopeRefusals] {
        scopes.flatMap { name, slots in
            slots.outcomes.map { service, outcomes in
                ScopeRefusals(service: service, scope: name, runs: outcomes.latest.runs, failures: outcomes.latest.failures)
            }
        }
        .sorted { ($0.service, $0.scope) < ($1.service, $1.scope) }
    }

    /// Each scope's limits, for a snapshot.
    func limits(at now: TimelineInstant) -> [ScopeConcurrency] {
        scopes.map { name, slots in
            ScopeConcurrency(
                scope: name,
                limit: slots.limit.permits,
                inFlight: slots.limit.inFlight,
                waiting: slots.waiting.count,
                isHeld: slots.limit.isHeld,
                rate: slots.rate.limit(at: now)
            )
        }
        .sorted { $0.scope < $1.scope }
    }

    private mutating func withScope<Result>(_ name: String, _ body: (inout Scope) -> Result) -> Result {
        if scopes[name] == nil {
            var scope = Scope(limit: ConcurrencyLimit(concurrency), rate: AdaptiveRate(pacing))
            if isHeld(name) { scope.limit.hold() }
            scopes[name] = scope
        }
        return body(&scopes[name]!)
    }
}

extension Admission.Scope {
    enum Take {
        /// A slot and, when the rate is limited, a token: the run may start.
        case taken
        /// Every slot is taken: the next run ending frees one.
        case full
        /// The rate or a pause withholds the slot until then.
        case due(TimelineInstant)
    }

    /// Takes a slot and a token for a run starting at `now`.
    mutating func take(at now: TimelineInstant) -> Take {
        if let until = pausedUntil {
            guard now >= until else { return .due(until) }
            pausedUntil = nil
        }
        guard limit.hasFreeSlot else { return .full }
        if let due = rate.take(at: now) { return .due(due) }
        _ = limit.acquire()
        return .taken
    }

    /// Arms the scope's timer for `due` unless it is armed as soon: the instant to arm it for.
    mutating func arm(_ due: TimelineInstant) -> TimelineInstant? {
        if let armed = wakeAt, armed <= due { return nil }
        wakeAt = due
        return due
    }
}

/// What a run waiting for a slot hears.
enum SlotGrant: Sendable {
    /// It holds a slot of its scope: run.
    case granted
    /// Something holds it back (an incident, the bus's stop): ask the bus, which parks it.
    case ask
    /// Its task was cancelled while it waited.
    case cancelled
    /// Its job's time limit passed while it waited.
    case expired
}

/// A scope's concurrency now, for a status display.
public struct ScopeConcurrency: Sendable, Equatable {
    /// The scope (an API's host).
    public var scope: String
    /// How many of its jobs may run at once now.
    public var limit: Int
    /// How many run now.
    public var inFlight: Int
    /// How many wait for a slot.
    public var waiting: Int
    /// Whether an incident holds it (the limit does not grow).
    public var isHeld: Bool
    /// The requests a second it is sent at most (``AdaptiveRate``); `nil` while its rate is not
    /// limited.
    public var rate: Double?

    public init(scope: String, limit: Int, inFlight: Int, waiting: Int, isHeld: Bool) {
        self.init(scope: scope, limit: limit, inFlight: inFlight, waiting: waiting, isHeld: isHeld, rate: nil)
    }

    public init(scope: String, limit: Int, inFlight: Int, waiting: Int, isHeld: Bool, rate: Double?) {
        self.scope = scope
        self.limit = limit
        self.inFlight = inFlight
        self.waiting = waiting
        self.isHeld = isHeld
        self.rate = rate
    }
}
