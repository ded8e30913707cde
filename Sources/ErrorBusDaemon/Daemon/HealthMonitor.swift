import ErrorBusUnits
import ErrorBus
import ErrorBusControl
import ErrorBusStore
import ErrorBusSupport
import Foundation
import Synchronization

/// Whether delivery is healthy: the one verdict `GetStatus` (so `errorbusctl health`) and the
/// `STATUS=` line give, from the thresholds of `health.*`.
///
/// Measures what an administrator's monitoring asks: how long the oldest job has waited, how
/// many jobs incidents hold, how many dead letters wait for an operator, how many open incidents
/// wait for an operator, how long the oldest open incident has been open, the free space left for the store, and how long work has waited while
/// nothing was delivered. Each is asked of its owner (the store, the bus, the file system,
/// sync) when a verdict is wanted; nothing is mirrored here.
final class HealthMonitor: Sendable {
    private let store: JobStore
    private let bus: ErrorBus
    private let stateDirectory: String
    private let levels: Mutex<DaemonConfiguration.Health>
    /// Files waiting in the outbox for room in the backlog: they wait too.
    private let overflow: BacklogOverflow
    /// Files the store refused to queue: they wait too.
    private let unqueued: UnqueuedFiles
    /// The last delivery.
    private let progress: DeliveryProgress

    init(
        levels: DaemonConfiguration.Health,
        store: JobStore,
        bus: ErrorBus,
        stateDirectory: String,
        overflow: BacklogOverflow,
        unqueued: UnqueuedFiles,
        progress: DeliveryProgress
    ) {
        self.levels = Mutex(levels)
        self.store = store
        self.bus = bus
        self.stateDirectory = stateDirectory
        self.overflow = overflow
        self.unqueued = unqueued
        self.progress = progress
    }

    /// New thresholds (a reload).
    func update(_ levels: DaemonConfiguration.Health) {
        self.levels.withLock { $0 = levels }
    }

    /// What is measured.
    struct Measures: Sendable, Equatable {
        /// How long the oldest job waiting for delivery has waited; `nil` when none waits.
        var oldestJob: Duration?
        var parked: Int
        /// How many of sync's dead letters the store keeps: they wait for an operator.
        var deadLetters: Int
        /// How long the oldest open incident has been open; `nil` when none is.
        var oldestIncident: Duration?
        /// The open incidents that wait for an operator (`needsOperator`), oldest first.
        var needingOperator: [NeedingOperator] = []
        /// Bytes free for the state directory; `nil` when it cannot be examined.
        var freeSpace: Int64?
        /// The size of the state directory's file system in bytes, which the free-space levels
        /// scale with; `nil` when it cannot be examined.
        var fileSystemSize: Int64?
        /// How long work has waited while nothing was delivered: since the last delivery (or the
        /// start), or since the oldest waiting job arrived if later; `nil` when nothing waits.
        var notDelivering: Duration?
        /// How many jobs wait for delivery (files left in the outbox for room, and those the store
        /// refused to queue, included).
        var waiting = 0
        /// While an incident paces uploads, the percentage of the latest ones its API refused,
        /// and that incident; 0 and `nil` while none paces.
        var refused = 0
        var pacing: IncidentID?
    }

    /// An open incident that waits for an operator.
    struct NeedingOperator: Sendable, Equatable {
        var id: IncidentID
        var title: String
    }

    /// The open incidents of `snapshot` that wait for an operator, oldest first.
    static func needingOperator(_ snapshot: BusSnapshot) -> [NeedingOperator] {
        snapshot.incidents.filter { $0.state == .needsOperator }.sorted { $0.id < $1.id }.map { NeedingOperator(id: $0.id, title: $0.text.title) }
    }

    /// `1 incident needs an operator (incident 4: Credentials rejected)`,
    /// `2 incidents need an operator (incidents 4, 7)`.
    static func describe(_ needing: [NeedingOperator]) -> String {
        switch needing.count {
        case 0: "no incident needs an operator"
        case 1: "1 incident needs an operator (incident \(needing[0].id): \(needing[0].title))"
        default: "\(needing.count) incidents need an operator (incidents \(needing.map { "\($0.id)" }.joined(separator: ", ")))"
        }
    }

    /// The percentage of its latest uploads the API of the incident that paces sync's uploads
    /// refused (the highest, should several pace), and that incident.
    static func refused(_ snapshot: BusSnapshot) -> (percent: Int, incident: IncidentID?) {
        var worst: (percent: Int, incident: IncidentID?) = (0, nil)
        for incident in snapshot.incidents where incident.state == .pacing && incident.service == SyncService.service {
            guard let refusals = snapshot.refusals.first(where: { $0.service == incident.service && $0.scope == incident.fingerprint.scope }) else { continue }
            let percent = Int((refusals.share * 100).rounded())
            if worst.incident == nil || percent > worst.percent { worst = (percent, incident.id) }
        }
        return worst
    }

    /// The verdict now. A measure the store cannot give is a critical check of its own: a store
    /// that cannot be read is no healthy delivery.
    func report(_ snapshot: BusSnapshot, now: Date = Date()) -> Control.Health {
        report((try? ParkedJobs(snapshot, store: store)) ?? ParkedJobs(snapshot), now: now)
    }

    /// The verdict on `parked`, the bus's state with every job parked, counted as status counts
    /// it.
    func report(_ parked: ParkedJobs, now: Date = Date()) -> Control.Health {
        let snapshot = parked.snapshot
        var problems: [Control.HealthCheck] = []
        var measures = Measures(parked: parked.total, deadLetters: 0, oldestIncident: snapshot.incidents.map(\.age).max())
        (measures.refused, measures.pacing) = Self.refused(snapshot)
        measures.needingOperator = Self.needingOperator(snapshot)
        // The files the store does not know yet wait too: those left in the outbox for room, and
        // those it refused to queue (counted even when it cannot be read).
        let notQueued = unqueued.summary
        var arrivals = [overflow.oldestWaitingForRoom, notQueued.oldest].compactMap { $0 }
        measures.waiting = overflow.waitingForRoom + notQueued.files
        do {
            // The oldest job queued, if older.
            let backlog = try store.backlog()
            arrivals += [backlog.oldest].compactMap { $0 }
            measures.waiting += backlog.jobs
            // Those the store keeps now, as errorbus_jobs counts them: a retry or a discard of
            // them clears the check at once.
            measures.deadLetters = try store.pendingCounts()[SyncService.service]?.deadLettered ?? 0
        } catch {
            problems.append(Control.HealthCheck(name: "store", status: .critical, value: 0, unit: "", warning: nil, critical: nil, text: "the store cannot be read: \(error)"))
        }
        if let oldest = arrivals.min() {
            measures.oldestJob = Duration.seconds(max(0, now.timeIntervalSince(oldest)))
            let since = max(progress.lastDelivery, oldest)
            measures.notDelivering = Duration.seconds(max(0, now.timeIntervalSince(since)))
        }
        if let info = try? SystemCall.statvfs(stateDirectory) {
            measures.freeSpace = Int64(info.f_bavail) * Int64(info.f_frsize)
            measures.fileSystemSize = Int64(info.f_blocks) * Int64(info.f_frsize)
        } else {
            problems.append(Control.HealthCheck(name: "free-space", status: .critical, value: 0, unit: "B", warning: nil, critical: nil, text: "\(stateDirectory) cannot be examined"))
        }
        return Self.evaluate(measures, levels: levels.withLock { $0 }, extra: problems)
    }

    /// The verdict on `measures` by `levels`.
    static func evaluate(_ measures: Measures, levels: DaemonConfiguration.Health, extra: [Control.HealthCheck] = []) -> Control.Health {
        var checks: [Control.HealthCheck] = []
        func seconds(_ duration: Duration?) -> Double? { duration.map { $0.timeInterval } }
        checks.append(check(
            "oldest-job",
            seconds(measures.oldestJob) ?? 0,
            unit: "s",
            seconds(levels.oldestJob.warning),
            seconds(levels.oldestJob.critical),
            text: measures.oldestJob.map { "oldest job waiting \(DurationText.format($0))" } ?? "no job waiting"
        ))
        checks.append(check(
            "parked",
            Double(measures.parked),
            unit: "",
            levels.parked.warning.map(Double.init),
            levels.parked.critical.map(Double.init),
            text: "\(measures.parked) parked"
        ))
        checks.append(check(
            "dead-letters",
            Double(measures.deadLetters),
            unit: "",
            levels.deadLetters.warning.map(Double.init),
            levels.deadLetters.critical.map(Double.init),
            text: measures.deadLetters == 0
                ? "no dead letter"
                : "\(IncidentReporter.count(measures.deadLetters, "dead letter")) wait\(measures.deadLetters == 1 ? "s" : "") for an operator"
        ))
        checks.append(check(
            "needs-operator",
            Double(measures.needingOperator.count),
            unit: "",
            levels.needsOperator.warning.map(Double.init),
            levels.needsOperator.critical.map(Double.init),
            text: Self.describe(measures.needingOperator)
        ))
        checks.append(check(
            "incident-age",
            seconds(measures.oldestIncident) ?? 0,
            unit: "s",
            seconds(levels.incidentAge.warning),
            seconds(levels.incidentAge.critical),
            text: measures.oldestIncident.map { "an incident open for \(DurationText.format($0))" } ?? "no open incident"
        ))
        checks.append(check(
            "not-delivering",
            seconds(measures.notDelivering) ?? 0,
            unit: "s",
            seconds(levels.notDelivering.warning),
            seconds(levels.notDelivering.critical),
            text: measures.notDelivering.map {
                "nothing delivered for \(DurationText.format($0)) while \(IncidentReporter.count(measures.waiting, "file")) wait"
            } ?? "nothing waiting"
        ))
        checks.append(check(
            "refused",
            Double(measures.refused),
            unit: "%",
            levels.refused.warning.map(Double.init),
            levels.refused.critical.map(Double.init),
            text: measures.pacing.map { "the API refused \(measures.refused) % of the latest uploads (incident \($0) paces them)" } ?? "no upload paced"
        ))
        if let free = measures.freeSpace {
            let freeSpace = levels.freeSpaceLevels(fileSystemSize: measures.fileSystemSize)
            checks.append(check(
                "free-space",
                Double(free),
                unit: "B",
                freeSpace.warning.map(Double.init),
                freeSpace.critical.map(Double.init),
                below: true,
                text: "\(ByteCountText.format(Int(free))) free for the store"
            ))
        }
        checks += extra
        let status = checks.map(\.status).max { $0.severity < $1.severity } ?? .ok
        let summary: String
        if status == .ok {
            // The facts, not a claim: an outage too short to reach a level is OK, not "delivering".
            summary = checks.filter { ["oldest-job", "parked", "incident-age"].contains($0.name) }.map(\.text).joined(separator: ", ")
        } else {
            summary = checks.filter { $0.status != .ok }.sorted { $0.status.severity > $1.status.severity }.map { check in
                guard let level = check.status == .critical ? check.critical : check.warning else { return check.text }
                return "\(check.text) (\(check.status.rawValue) \(check.name == "free-space" ? "at or below" : "from") \(show(level, unit: check.unit)))"
            }.joined(separator: "; ")
        }
        return Control.Health(status: status, summary: summary, checks: checks)
    }

    private static func check(
        _ name: String,
        _ value: Double,
        unit: String,
        _ warning: Double?,
        _ critical: Double?,
        below: Bool = false,
        text: String
    ) -> Control.HealthCheck {
        func reaches(_ level: Double?) -> Bool {
            guard let level else { return false }
            return below ? value <= level : value >= level
        }
        let status: Control.HealthStatus = reaches(critical) ? .critical : reaches(warning) ? .warning : .ok
        return Control.HealthCheck(name: name, status: status, value: value, unit: unit, warning: warning, critical: critical, text: text)
    }

    /// A level as an administrator sets it: `15m`, `1GiB`, `1000`.
    static func show(_ value: Double, unit: String) -> String {
        switch unit {
        case "s": DurationText.exact(.seconds(value))
        case "B": ByteCountText.exact(Int64(value))
        case "%": "\(Int(value)) %"
        default: value == value.rounded() ? String(Int64(value)) : String(value)
        }
    }
}

extension Control.HealthStatus {
    /// OK < WARNING < CRITICAL.
    var severity: Int {
        switch self {
        case .ok: 0
        case .warning: 1
        case .critical: 2
        }
    }
}
