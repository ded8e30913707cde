import DequeModule
import HeapModule
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import Synchronization

/// An open incident inside the bus: its policy, its parked commands, its counters.
/// Confined to the bus actor.
final class IncidentRecord {
    let id: IncidentID
    let fingerprint: Fingerprint
    let service: String
    /// When it opened, by the bus's clock (for its age) and by the wall clock (for people).
    let opened: TimelineInstant
    let openedAt: Date
    /// Unique across hosts and runs (``IncidentSnapshot/uuid``).
    let uuid = UUID()
    /// What the incident holds back while it holds its scope; `nil` for `invalid`, and when
    /// failures are grouped per job (its one job is parked; no other is held).
    let holdKey: HoldKey?
    /// Whether its jobs are parked until the cause is gone (all but `invalid`, whose jobs are
    /// dead letters).
    var parks: Bool { fingerprint.kind != .invalid }

    /// Whether it is one job's, which failed while others of its service succeeded: it holds back
    /// nothing, retries that job on its own back-off, and gives it up after
    /// ``ErrorBusConfiguration/Isolation/maxAttempts``.
    let isolation: Bool

    var category: ErrorCategory
    var text: OperatorText
    /// Where it stands, with what belongs to that state alone; changed only by
    /// ``enter(_:next:keepingSchedule:)``.
    private(set) var phase = Phase.opening
    var state: IncidentState { phase.state }
    var policy: IncidentPolicy<TimelineInstant>
    var failures = 1
    /// What its last step (a canary, a probe, a sign-in) found when it failed: why its cause
    /// still holds.
    var lastCheck: String?
    /// Parked jobs that never failed under it: they merely wait behind it. The first canary
    /// candidates, and the first released.
    private(set) var waiting = Deque<Command>()
    /// Parked jobs that failed under it themselves. A canary is taken from them only when no
    /// other job waits, and a failed canary goes to their back, so that one job that fails for
    /// a reason of its own is not every canary; they are released last.
    private(set) var failed = Deque<Command>()
    /// Parked jobs the scope refused while it served others, each waiting out a back-off of its
    /// own (``ErrorBusConfiguration/Pacing/retry``) before it joins ``failed``, soonest first.
    private(set) var delayed = Heap<Delayed>()
    /// When the one timer that moves due ``delayed`` jobs on is armed for.
    var delayedWakeAt: TimelineInstant?
    var parkedByService: [String: Int] = [:]
    /// The services whose owners keep jobs parked under it in durable queues of their own
    /// (``ParkedJobSource``), each with one of those jobs (its scope and realm, for asking what
    /// holds it): the bus keeps nothing per job of theirs, and asks their source.
    private(set) var durable: [String: Job] = [:]
    var released = 0
    var deadLettered = 0
    /// The step the policy scheduled and when.
    /// How long the last failed run of a job it holds took: what its next canary costs the
    /// retry budget (``RetryBudget/price(ofRetryAfterRun:)``).
    var lastFailedRun = Duration.zero
    var next: (step: PolicyStep, at: TimelineInstant)?
    /// Bumped whenever the schedule changes, so that stale timers, probes and releases are
    /// recognised and ignored.
    var generation: UInt64 = 0
    /// An isolation gave its job up as a dead letter: it resolves once the job's caller heard.
    var givenUp = false
    /// An operator took parked jobs out of it (``ErrorBus/cancel(job:service:)``): if that
    /// leaves it nothing to try, it ends discarded.
    var emptiedByOperator = false

    /// Where an incident stands, each state with its own data.
    enum Phase: Equatable {
        /// Being opened: holds nothing yet, and is never shown.
        case opening
        case waiting, canary, probing, reauthenticating, needsOperator, paused, collecting
        /// Its jobs run again, released after its cause went away, or paced; `running`: whether a
        /// run of them (``ErrorBus/runRelease(_:generation:)``) is under way (a job that becomes
        /// due while none is joins the next).
        case releasing(running: Bool)
        case pacing(running: Bool)
        /// Its cause went away `since` then and its jobs were released: the time it resolves as
        /// of, after ``ErrorBusConfiguration/settleWindow``.
        case settling(since: TimelineInstant)
        case resolved(Resolution, at: TimelineInstant, date: Date)

        var state: IncidentState {
            switch self {
            case .opening: .opening
            case .waiting: .waiting
            case .canary: .canary
            case .probing: .probing
            case .reauthenticating: .reauthenticating
            case .needsOperator: .needsOperator
            case .paused: .paused
            case .collecting: .collecting
            case .releasing: .releasing
            case .pacing: .pacing
            case .settling: .settling
            case .resolved: .resolved
            }
        }
    }

    /// Whether a run of its released or paced jobs is under way.
    var isReleasing: Bool {
        get {
            switch phase {
            case .releasing(let running), .pacing(let running): running
            default: false
            }
        }
        set {
            switch phase {
            case .releasing: phase = .releasing(running: newValue)
            case .pacing: phase = .pacing(running: newValue)
            default: break
            }
        }
    }

    /// Marks a run of its released or paced jobs as under way: returns whether one must start
    /// (it releases or paces, and none runs).
    func startsRelease() -> Bool {
        guard state.releases, !isReleasing else { return false }
        isReleasing = true
        return true
    }

    /// The instant to arm the one timer of its jobs waiting out a back-off for (the soonest due),
    /// unless one is armed as soon.
    func delayedWake() -> TimelineInstant? {
        guard let due = nextDue, delayedWakeAt.map({ due < $0 }) ?? true else { return nil }
        delayedWakeAt = due
        return due
    }

    /// While it settles, when its cause went away.
    var recovered: TimelineInstant? {
        if case .settling(let since) = phase { since } else { nil }
    }

    init(id: IncidentID, failure: Failure, policy: IncidentPolicy<TimelineInstant>, isolation: Bool = false, at now: TimelineInstant, date: Date) {
        self.id = id
        self.isolation = isolation
        self.fingerprint = failure.fingerprint
        self.service = failure.service
        self.opened = now
        self.openedAt = date
        self.holdKey = HoldKey(failure.fingerprint)
        self.category = failure.category
        self.text = failure.text
        self.policy = policy
    }

    /// Moves it to `state`, the one way its state changes, with `next` scheduled (or nothing) as a
    /// new schedule: the timers, probes and releases of the one before are stale from now on
    /// (``generation``). `keepingSchedule` changes only the state, so that a release under way
    /// goes on (releasing to pacing). Returns what becomes of its hold on its scope, if anything.
    @discardableResult
    func enter(_ phase: Phase, next: (step: PolicyStep, at: TimelineInstant)? = nil, keepingSchedule: Bool = false) -> HoldChange? {
        let wasHolding = state.holdsScope
        if !keepingSchedule {
            generation &+= 1
            self.next = next
        }
        // Out of releasing and pacing, its release, if one runs, ends at its next job (the
        // generation changed).
        self.phase = phase
        if state.holdsScope {
            // Held, its jobs wait for the incident's next step: none waits out a back-off.
            _ = moveDue(at: nil)
        }
        guard let holdKey, wasHolding != state.holdsScope else { return nil }
        return state.holdsScope ? .hold(holdKey) : .letGo(holdKey)
    }

    /// What becomes of an incident's hold on its scope when its state changes.
    enum HoldChange: Equatable {
        case hold(HoldKey)
        case letGo(HoldKey)
    }

    /// Moves the deadline of `step` back to `deadline` if it already waits for that step, by
    /// then or sooner: returns whether it did. The timer armed for it re-arms when it fires early,
    /// so a stream of joins that each push the deadline back costs no timer each.
    func postpone(_ step: PolicyStep, to deadline: TimelineInstant) -> Bool {
        guard phase == (step == .close ? .collecting : .waiting), let next, next.step == step, deadline >= next.at else { return false }
        self.next = (step, deadline)
        return true
    }

    /// A timer armed for its schedule `generation` fired at `now`: stale (its schedule changed
    /// since), early (its deadline moved back since: wait for the rest), or the step to take now.
    func timerFired(generation: UInt64, at now: TimelineInstant) -> Wake {
        guard generation == self.generation, let next else { return .stale }
        return now >= next.at ? .take(next.step) : .rearm(next.at)
    }

    enum Wake: Equatable {
        case stale
        case rearm(TimelineInstant)
        case take(PolicyStep)
    }

    /// How many jobs are parked under it.
    var parkedCount: Int { waiting.count + failed.count + delayed.count }

    /// Whether no job is parked in it (the bus's own parked jobs; those of durable queues are
    /// their owners' to tell).
    var isEmpty: Bool { waiting.isEmpty && failed.isEmpty && delayed.isEmpty }

    /// Whether it may have jobs to try or release: its own, or some parked with their owners.
    var hasParked: Bool { !isEmpty || !durable.isEmpty }

    /// One of the jobs parked under it in durable queues, if any.
    var durableJob: Job? { durable.values.first }

    /// The services with jobs parked under it in durable queues.
    var durableServices: [String] { Array(durable.keys) }

    /// A job of `job`'s service is parked under it in its owner's durable queue.
    func parkedDurably(_ job: Job) {
        if durable[job.service] == nil { durable[job.service] = job }
    }

    /// The owners of durable queues said they have no job parked under it (`services`), or
    /// released them.
    func noneParkedDurably(_ services: some Sequence<String>) {
        for service in services { durable[service] = nil }
    }

    /// Whether a parked job may be tried or released now (none waits out a back-off).
    var hasReady: Bool { !waiting.isEmpty || !failed.isEmpty }

    /// The job tried or released next.
    var first: Command? { waiting.first ?? failed.first }

    /// Every parked job, in the order they are tried and released: those that merely wait, then
    /// those that failed under it, then those waiting out a back-off, soonest first.
    var parked: some Sequence<Command> { [Array(waiting), Array(failed), delayed.unordered.sorted().map(\.command)].joined() }

    /// Parks a job: among those that failed under the incident when `failed`, otherwise among
    /// those that wait behind it; with `due`, among those waiting out a back-off until then.
    func append(_ command: Command, failed: Bool, due: TimelineInstant? = nil) {
        if let due {
            delayed.insert(Delayed(due: due, command: command))
        } else if failed {
            self.failed.append(command)
        } else {
            waiting.append(command)
        }
        parkedByService[command.job.service, default: 0] += 1
    }

    /// Moves the jobs whose back-off is over by `now` (`nil`: every one) among those that failed,
    /// soonest first. Returns whether any moved.
    func moveDue(at now: TimelineInstant?) -> Bool {
        var moved = false
        if let due = durableDue, now.map({ due <= $0 }) ?? true {
            durableDue = nil
            moved = true
        }
        while let next = delayed.min, now.map({ next.due <= $0 }) ?? true {
            failed.append(delayed.removeMin().command)
            moved = true
        }
        return moved
    }

    /// When the next job's back-off is over.
    var nextDue: TimelineInstant? { [delayed.min?.due, durableDue].compactMap { $0 }.min() }

    /// A job of a durable queue its scope paced runs again from its owner's queue after a
    /// back-off: the incident waits that long (the latest of them) before it sees whether its
    /// scope serves again, as it waits for its own paced jobs.
    private(set) var durableDue: TimelineInstant?

    /// The services whose owners keep jobs it paced, queued until their back-off is over: its
    /// next release asks their sources too, to hear when those jobs ran.
    private(set) var pacedServices: Set<String> = []

    func pacedDurably(_ job: Job, until due: TimelineInstant) {
        durableDue = max(durableDue ?? due, due)
        pacedServices.insert(job.service)
    }

    /// The services whose owners its release asks to let its jobs go and say when they ran:
    /// those with jobs parked under it, and those with jobs it paced. Neither has any left with
    /// it afterwards.
    func takeReleasedServices() -> Set<String> {
        let services = pacedServices.union(durable.keys)
        pacedServices = []
        durable = [:]
        return services
    }

    /// The next job to try or release.
    func popFirst() -> Command? {
        guard let command = waiting.popFirst() ?? failed.popFirst() else { return nil }
        didRemove(command)
        return command
    }

    func remove(where predicate: (Command) -> Bool) -> [Command] {
        var removed = Array(waiting.filter(predicate))
        if !removed.isEmpty { waiting.removeAll(where: predicate) }
        let removedFailed = Array(failed.filter(predicate))
        if !removedFailed.isEmpty {
            failed.removeAll(where: predicate)
            removed += removedFailed
        }
        if delayed.unordered.contains(where: { predicate($0.command) }) {
            var kept: [Delayed] = []
            for entry in delayed.unordered {
                if predicate(entry.command) { removed.append(entry.command) } else { kept.append(entry) }
            }
            delayed = Heap(kept)
        }
        for command in removed { didRemove(command) }
        return removed
    }

    func removeAll() -> [Command] {
        let all = Array(parked)
        waiting.removeAll()
        failed.removeAll()
        delayed = Heap()
        parkedByService.removeAll()
        return all
    }

    /// A parked job waiting out its back-off.
    struct Delayed: Comparable {
        let due: TimelineInstant
        let command: Command

        static func < (lhs: Delayed, rhs: Delayed) -> Bool {
            (lhs.due, lhs.command.serial) < (rhs.due, rhs.command.serial)
        }

        static func == (lhs: Delayed, rhs: Delayed) -> Bool {
            lhs.due == rhs.due && lhs.command.serial == rhs.command.serial
        }
    }


    private func didRemove(_ command: Command) {
        let service = command.job.service
        if let count = parkedByService[service], count > 1 {
            parkedByService[service] = count - 1
        } else {
            parkedByService[service] = nil
        }
    }

    func snapshot(at now: TimelineInstant) -> IncidentSnapshot {
        let (resolution, closed, closedAt): (Resolution?, TimelineInstant?, Date?) =
            if case .resolved(let resolution, let at, let date) = phase { (resolution, at, date) } else { (nil, nil, nil) }
        return IncidentSnapshot(
            id: id,
            uuid: uuid,
            fingerprint: fingerprint,
            category: category,
            service: service,
            text: text,
            state: state,
            failures: failures,
            parked: parkedCount,
            parkedByService: parkedByService,
            released: released,
            deadLettered: deadLettered,
            lastCheck: lastCheck,
            age: opened.duration(to: closed ?? now),
            openedAt: openedAt,
            closedAt: closedAt,
            next: next.map { .init(step: $0.step, delay: max(.zero, now.duration(to: $0.at))) },
            resolution: resolution
        )
    }
}

/// What an open incident holds back: every job of a scope (a server), one service's jobs of a
/// scope, every job of a realm, or of a service. An incident of one job (a job failing on its
/// own, or ``ErrorBusConfiguration/Grouping/perJob``) holds back nothing else.
enum HoldKey: Hashable, Sendable {
    case scope(String)
    case serviceAtScope(service: String, scope: String)
    case realm(String)
    case service(String)

    init?(_ fingerprint: Fingerprint) {
        guard fingerprint.job == nil, fingerprint.kind.holdsScope else { return nil }
        switch fingerprint.kind.scopeKind {
        case .host: self = .scope(fingerprint.scope)
        case .serviceAtHost:
            // A fingerprint made by hand without its service holds the whole scope.
            self = fingerprint.service.map { .serviceAtScope(service: $0, scope: fingerprint.scope) } ?? .scope(fingerprint.scope)
        case .realm: self = .realm(fingerprint.scope)
        case .service: self = .service(fingerprint.scope)
        }
    }

    /// The scope whose concurrency limit the hold freezes, if it holds one.
    var scope: String? {
        switch self {
        case .scope(let scope), .serviceAtScope(_, let scope): scope
        case .realm, .service: nil
        }
    }

    /// Whether it holds back `job`.
    func holds(_ job: Job) -> Bool {
        switch self {
        case .scope(let scope): job.scope == scope
        case .serviceAtScope(let service, let scope): job.scope == scope && job.service == service
        case .realm(let realm): job.realm == realm
        case .service(let service): job.service == service
        }
    }
}

/// When a held job's time is up (``Job/expiresAfter``), for the bus's heap of expiries.
struct Expiry: Comparable {
    let deadline: TimelineInstant
    let serial: UInt64

    static func < (lhs: Expiry, rhs: Expiry) -> Bool {
        (lhs.deadline, lhs.serial) < (rhs.deadline, rhs.serial)
    }
}

/// A job with what it takes to run it again (a command object: job, operation, completion):
/// what the bus parks, and resubmits once its incident's cause is gone.
struct Command: Sendable {
    /// Unique per command, for withdrawing it.
    let serial: UInt64
    let job: Job
    let operation: @Sendable () async throws -> Void
    /// Receives the final outcome of a command the bus held.
    let completion: @Sendable (JobOutcome) async -> Void
    /// Whether its owner keeps it in a durable queue (``ErrorBus/run(_:operation:)``): the bus
    /// never holds it, and tells the owner where it waits instead (``Verdict``).
    var durable = false
    /// The state of the job's limits for this submission, for a job with any; `nil` otherwise.
    var limits: Job.LimitsBox? { job.limits }
    /// Its runs that failed so far (this submission's).
    var failedRuns = 0
    /// The evidence so far that its failures are its own (``ErrorBusConfiguration/Isolation``),
    /// in decimal orders of magnitude.
    var evidence = 0.0
    /// The number of its fresh run, when that run failed (``ScopeOutcomes/suspect(freshRun:)``).
    var freshFailure: UInt64?
    /// The successes of its scope's other jobs counted at its last failure
    /// (``ScopeOutcomes/successes``): whether any succeeded before its next one.
    var successesAtLastFailure: UInt64?
    /// Its failures since it was found failing on its own (the one that found it included).
    var ownFailures = 0
    /// How long its last failed run took (``ErrorBus`` `retryCost(of:)`).
    var lastRun = Duration.zero

    /// Whether it is set aside on its own: found so in this run of the bus, or in an earlier one
    /// (``Job/failedOnItsOwn``).
    var isIsolated: Bool { ownFailures > 0 || job.failedOnItsOwn > 0 }

    /// Whether its next run is a fresh one: it has not failed before (``ScopeOutcomes``).
    var isFresh: Bool { failedRuns == 0 && !isIsolated }

    /// Whether its runs count in its scope's outcomes: not once it is set aside on its own.
    var counts: Bool { !isIsolated }

    /// Whether its scope's limits learn from its runs: not once it is set aside on its own, or
    /// its failures nearly single it out (a job the server refuses on its own must not make the
    /// scope look overloaded).
    var teaches: Bool { !isIsolated && evidence < Self.suspicion }

    /// The number of its failed fresh run, once its failures nearly single it out: its success
    /// clears the suspicion (``ScopeOutcomes/clear(freshRun:)``).
    var suspectedFreshRun: UInt64? { evidence >= Self.suspicion ? freshFailure : nil }

    /// From this much evidence on, a job's failures no longer teach its scope anything.
    static var suspicion: Double { 2 }

    init(
        serial: UInt64,
        job: Job,
        submittedAt now: @autoclosure () -> TimelineInstant,
        operation: @escaping @Sendable () async throws -> Void,
        completion: @escaping @Sendable (JobOutcome) async -> Void
    ) {
        self.serial = serial
        self.job = job.startingLimits(at: now)
        self.operation = operation
        self.completion = completion
    }

    /// Whether the job's time is up at `now`, which is read only for a job with a time limit.
    func hasExpired(at now: @autoclosure () -> TimelineInstant) -> Bool {
        guard let expiresAt = limits?.expiresAt else { return false }
        return now() >= expiresAt
    }

    /// Whether the job may not run again: it failed as many runs as it may.
    var hasExhaustedAttempts: Bool {
        guard let maximum = job.maxAttempts, let limits else { return false }
        return limits.runs.load(ordering: .relaxed) >= maximum
    }
}
