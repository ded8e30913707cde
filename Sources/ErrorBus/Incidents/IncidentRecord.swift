import DequeModule
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
    let openedAt = Date()
    /// What the incident holds back while it holds its scope; `nil` for `invalid`, and when
    /// failures are grouped per job (its one job is parked; no other is held).
    let holdKey: HoldKey?
    /// Whether its jobs are parked until the cause is gone (all but `invalid`, whose jobs are
    /// dead letters).
    var parks: Bool { fingerprint.kind != .invalid }

    var category: ErrorCategory
    var text: OperatorText
    var state: IncidentState
    var policy: IncidentPolicy<TimelineInstant>
    var failures = 1
    var parked = Deque<Command>()
    var parkedByService: [String: Int] = [:]
    var released = 0
    var deadLettered = 0
    /// The step the policy scheduled and when.
    var next: (step: PolicyStep, at: TimelineInstant)?
    /// Bumped whenever the schedule changes, so that stale timers, probes and releases are
    /// recognised and ignored.
    var generation: UInt64 = 0
    var resolution: Resolution?
    var closed: TimelineInstant?
    var closedAt: Date?

    init(id: IncidentID, failure: Failure, policy: IncidentPolicy<TimelineInstant>, at now: TimelineInstant) {
        self.id = id
        self.fingerprint = failure.fingerprint
        self.service = failure.service
        self.opened = now
        self.holdKey = HoldKey(failure.fingerprint)
        self.category = failure.category
        self.text = failure.text
        self.state = .waiting
        self.policy = policy
    }

    func append(_ command: Command, atFront: Bool) {
        if atFront { parked.prepend(command) } else { parked.append(command) }
        parkedByService[command.job.service, default: 0] += 1
    }

    func popFirst() -> Command? {
        guard let command = parked.popFirst() else { return nil }
        didRemove(command)
        return command
    }

    func remove(where predicate: (Command) -> Bool) -> [Command] {
        let removed = Array(parked.filter(predicate))
        guard !removed.isEmpty else { return [] }
        parked.removeAll(where: predicate)
        for command in removed { didRemove(command) }
        return removed
    }

    func removeAll() -> [Command] {
        let all = Array(parked)
        parked.removeAll()
        parkedByService.removeAll()
        return all
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
        IncidentSnapshot(
            id: id,
            fingerprint: fingerprint,
            category: category,
            service: service,
            text: text,
            state: state,
            failures: failures,
            parked: parked.count,
            parkedByService: parkedByService,
            released: released,
            deadLettered: deadLettered,
            age: opened.duration(to: closed ?? now),
            openedAt: openedAt,
            closedAt: closedAt,
            next: next.map { .init(step: $0.step, delay: max(.zero, now.duration(to: $0.at))) },
            resolution: resolution
        )
    }
}

/// What an open incident holds back: every job of a host, of a realm, or of a service. An
/// incident of one job (``ErrorBusConfiguration/Grouping/perJob``) holds back nothing else.
enum HoldKey: Hashable, Sendable {
    case scope(String)
    case realm(String)
    case service(String)

    init?(_ fingerprint: Fingerprint) {
        guard fingerprint.job == nil, fingerprint.kind.holdsScope else { return nil }
        switch fingerprint.kind.scopeKind {
        case .host: self = .scope(fingerprint.scope)
        case .realm: self = .realm(fingerprint.scope)
        case .service: self = .service(fingerprint.scope)
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
    /// The state of the job's limits for this submission, for a job with any; `nil` otherwise.
    var limits: Job.LimitsBox? { job.limits }

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
