import DequeModule

/// Whether a job may start now, decided without a hop to the actor: nothing holds its scope,
/// realm or service back, and its scope has a free concurrency slot.
///
/// The held keys and the lifecycle mirror the actor's state (written only by the actor, under
/// the lock); the slots are owned here: each scope's ``ConcurrencyLimit``, the runs waiting for
/// one of its slots, oldest first, and the pause a server's rate-limit fields asked for. So is
/// when each service's latest successful run at a scope started: what tells a job that fails
/// while others succeed (the bus asks it when a job fails again).
struct Admission: Sendable {
    var held: Set<HoldKey> = []
    private(set) var stopped = false
    private var scopes: [String: Scope] = [:]
    private let concurrency: ErrorBusConfiguration.Concurrency

    struct Scope: Sendable {
        var limit: ConcurrencyLimit<TimelineInstant>
        var waiting = Deque<Waiter>()
        /// No slot is given out before this (a server said its quota is spent).
        var pausedUntil: TimelineInstant?
        /// When the latest successful run of each service started.
        var latestSuccess: [String: TimelineInstant] = [:]
    }

    /// A run waiting for a slot.
    struct Waiter: Sendable {
        let serial: UInt64
        let job: Job
        let continuation: CheckedContinuation<SlotGrant, Never>
    }

    init(concurrency: ErrorBusConfiguration.Concurrency) {
        self.concurrency = concurrency
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
    /// something holds it back (`.ask`); `nil`: it must wait, and ``wait(_:)`` queues it.
    mutating func enter(_ job: Job, at now: TimelineInstant) -> SlotGrant? {
        guard mayRun(job) else { return .ask }
        return withScope(job.scope) { scope in
            if let until = scope.pausedUntil {
                guard now >= until else { return nil }
                scope.pausedUntil = nil
            }
            // Whoever waits already goes first.
            guard scope.waiting.isEmpty, scope.limit.acquire() else { return nil }
            return .granted
        }
    }

    /// Queues a run for the next free slot of its scope.
    mutating func wait(_ waiter: Waiter) {
        withScope(waiter.job.scope) { $0.waiting.append(waiter) }
    }

    /// Takes a waiting run out of the queue (its task was cancelled); `nil` when a slot or an
    /// answer was already handed to it.
    mutating func withdraw(serial: UInt64, scope: String) -> Waiter? {
        guard let index = scopes[scope]?.waiting.firstIndex(where: { $0.serial == serial }) else { return nil }
        return scopes[scope]?.waiting.remove(at: index)
    }

    /// Gives back a run's slot with what the run came to, and hands free slots to the runs
    /// waiting: the caller resumes them, outside the lock.
    mutating func release(_ job: Job, _ outcome: ConcurrencyLimit<TimelineInstant>.Outcome, at now: TimelineInstant) -> [(Waiter, SlotGrant)] {
        withScope(job.scope) { scope in
            scope.limit.release(outcome, at: now)
            if case .success(let latency) = outcome { scope.succeeded(job.service, startedAt: now.advanced(by: .zero - latency)) }
        }
        return admitWaiting(job.scope, at: now)
    }

    /// Teaches a scope's limit the latency of a successful run that held no slot (a canary).
    mutating func calibrate(_ job: Job, with latency: Duration, at now: TimelineInstant) {
        withScope(job.scope) { scope in
            scope.limit.calibrate(latency)
            scope.succeeded(job.service, startedAt: now.advanced(by: .zero - latency))
        }
    }

    /// When the latest successful run of `service` at `scope` started; `nil` if none did yet.
    func latestSuccess(of service: String, at scope: String) -> TimelineInstant? {
        scopes[scope]?.latestSuccess[service]
    }

    /// Hands free slots of a scope to the runs waiting for them, oldest first; a run that
    /// something holds back now is told to ask the bus instead.
    mutating func admitWaiting(_ scope: String, at now: TimelineInstant) -> [(Waiter, SlotGrant)] {
        // Taken out while it is worked on, so that `mayRun` can read the rest.
        guard var slots = scopes.removeValue(forKey: scope) else { return [] }
        defer { scopes[scope] = slots }
        if let until = slots.pausedUntil {
            guard now >= until else { return [] }
            slots.pausedUntil = nil
        }
        var answers: [(Waiter, SlotGrant)] = []
        while let waiter = slots.waiting.first {
            if !mayRun(waiter.job) {
                answers.append((waiter, .ask))
            } else if slots.limit.acquire() {
                answers.append((waiter, .granted))
            } else {
                break
            }
            slots.waiting.removeFirst()
        }
        return answers
    }

    /// No slot of `scope` is given out before `until`.
    mutating func pause(_ scope: String, until: TimelineInstant) {
        withScope(scope) { slots in
            slots.pausedUntil = max(slots.pausedUntil ?? until, until)
        }
    }

    /// A key is held now: a held scope's limit stops growing, and the runs waiting for its
    /// slots that the key holds back go to park instead.
    mutating func hold(_ key: HoldKey) -> [Waiter] {
        held.insert(key)
        guard let scope = key.scope, scopes[scope] != nil else { return [] }
        return withScope(scope) { slots in
            slots.limit.hold()
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
    mutating func unhold(_ key: HoldKey) {
        held.remove(key)
        guard let scope = key.scope, scopes[scope] != nil, !isHeld(scope) else { return }
        withScope(scope) { $0.limit.resume() }
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

    /// Each scope's limit, for a snapshot.
    var limits: [ScopeConcurrency] {
        scopes.map { name, slots in
            ScopeConcurrency(
                scope: name,
                limit: slots.limit.permits,
                inFlight: slots.limit.inFlight,
                waiting: slots.waiting.count,
                isHeld: slots.limit.isHeld
            )
        }
        .sorted { $0.scope < $1.scope }
    }

    private mutating func withScope<Result>(_ name: String, _ body: (inout Scope) -> Result) -> Result {
        if scopes[name] == nil {
            var scope = Scope(limit: ConcurrencyLimit(concurrency))
            if isHeld(name) { scope.limit.hold() }
            scopes[name] = scope
        }
        return body(&scopes[name]!)
    }
}

extension Admission.Scope {
    mutating func succeeded(_ service: String, startedAt start: TimelineInstant) {
        if let latest = latestSuccess[service], latest >= start { return }
        latestSuccess[service] = start
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

    public init(scope: String, limit: Int, inFlight: Int, waiting: Int, isHeld: Bool) {
        self.scope = scope
        self.limit = limit
        self.inFlight = inFlight
        self.waiting = waiting
        self.isHeld = isHeld
    }
}
