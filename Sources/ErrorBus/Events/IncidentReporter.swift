import ErrorBusUnits
import DequeModule
import Synchronization
public import CoreMetrics
public import Logging
public import ServiceLifecycle

/// Tells the story of each incident in a daemon's log and metrics: one line per step of its
/// life (opened, needs an operator, resolved), never one per failure, and swift-metrics counters
/// of those steps and of dead letters, by service and category.
///
/// Run it beside the bus in the daemon's `ServiceGroup` (listed before the bus, so that it stops
/// after it and tells the incidents the bus ended), or call ``report(_:)`` from a subscription of
/// your own.
///
/// The lines: `incident 3 opened: …` (warning), `incident 3 needs an operator: …` (error),
/// `incident 3 resolved after 42 s: 120 failures absorbed, 118 jobs released, 2 dead-lettered`
/// (notice); each dead letter (debug: the incident's lines tell the story); retries waiting for
/// the retry budget outside any incident (warning). The counters, with the dimensions `service` and
/// `category` (a ``ErrorCategory/Kind`` in snake case, `rate_limited`, or `paused` for an
/// operator's pause): `errorbus_incidents_opened_total`, `errorbus_incidents_escalated_total`,
/// `errorbus_incidents_resolved_total`, `errorbus_failures_absorbed_total` (counted at each
/// event of the incident, and by ``countAbsorbed(_:)``, not at its end) and `errorbus_jobs_dead_lettered_total`;
/// ``declareCounters(services:)`` creates them at 0, so that a query's `increase()` sees a
/// host's first incident. Nothing is counted unless the process bootstraps a metrics backend
/// (`MetricsSystem.bootstrap`).
public struct IncidentReporter: Service {
    private let bus: ErrorBus
    private let logger: Logger
    private let metadata: @Sendable (BusEvent, IncidentSnapshot) -> Logger.Metadata
    private let metricsFactory: (any MetricsFactory)?
    /// The failures of each open incident counted so far.
    private let absorbed = AbsorbedFailures()

    /// Creates a reporter of `bus`'s incidents.
    ///
    /// - Parameters:
    ///   - bus: The bus whose incidents it tells.
    ///   - logger: Where the lines go.
    ///   - metadata: The metadata of each incident's line; by default ``standardMetadata(of:_:)``.
    ///     A daemon logging to the systemd journal can name its own fields here (a
    ///     `MESSAGE_ID` per step, say).
    ///   - metricsFactory: Where the counters go; `nil` (the default): the process's metrics
    ///     backend at the time each is counted.
    public init(
        bus: ErrorBus,
        logger: Logger,
        metadata: @escaping @Sendable (BusEvent, IncidentSnapshot) -> Logger.Metadata = IncidentReporter.standardMetadata,
        metricsFactory: (any MetricsFactory)? = nil
    ) {
        self.bus = bus
        self.logger = logger
        self.metadata = metadata
        self.metricsFactory = metricsFactory
    }

    /// `errorbus.incident`, `errorbus.service`, `errorbus.category` and `errorbus.scope`.
    public static func standardMetadata(of event: BusEvent, _ incident: IncidentSnapshot) -> Logger.Metadata {
        [
            "errorbus.incident": "\(incident.id)",
            "errorbus.service": "\(incident.service)",
            "errorbus.category": "\(category(of: incident))",
            "errorbus.scope": "\(incident.fingerprint.scope)",
        ]
    }

    /// Reports every event of the bus until the group shuts the reporter down gracefully. When
    /// the bus stops first, the reporter tells its last events, then waits for its own turn (a
    /// service of a `ServiceGroup` that returns before it is asked to stop stops the group):
    /// outside a group, it returns only when its task is cancelled.
    public func run() async {
        let subscription = await bus.subscribe()
        reportOpen(subscription.initialSnapshot)
        // Not cancelled by the graceful shutdown: the events end when the bus stops, and the
        // last of them tell the incidents the stop ended.
        for await event in subscription {
            report(event)
        }
        try? await gracefulShutdown()
    }

    /// Tells the incidents already open when the reporting starts (opened before the reporter
    /// subscribed): each as opened, so that every incident's story has a beginning.
    public func reportOpen(_ snapshot: BusSnapshot) {
        for incident in snapshot.incidents {
            report(BusEvent(kind: .incidentOpened, incident: incident))
        }
    }

    /// The counters' names, each counted by `service` and `category`.
    public static let counterNames = [
        "errorbus_incidents_opened_total", "errorbus_incidents_escalated_total", "errorbus_incidents_resolved_total",
        "errorbus_failures_absorbed_total", "errorbus_jobs_dead_lettered_total",
    ]

    /// The `category` values of the counters: every ``ErrorCategory/Kind`` and `paused`.
    public static let counterCategories = ErrorCategory.Kind.allCases.map { metricValue("\($0)") } + ["paused"]

    /// Creates every counter at 0 for each of `services` and every category. A counter made at
    /// its first event starts at 1, and a monitoring query's `increase()` misses that rise: an
    /// alert on a host's first incident would never fire.
    public func declareCounters(services: some Sequence<String>) {
        let factory = metricsFactory ?? MetricsSystem.factory
        for service in services {
            for category in Self.counterCategories {
                for name in Self.counterNames {
                    Counter(label: name, dimensions: [("service", service), ("category", category)], factory: factory).increment(by: 0)
                }
            }
        }
    }

    /// Counts the failures the open incidents of `snapshot` absorbed since they were last
    /// counted. A failure that joins an incident is no event (a burst of a hundred thousand
    /// would be as many); each event of an incident counts those before it, and a process that
    /// serves its metrics calls this before each exposition, so that a scrape counts every
    /// failure absorbed until then.
    public func countAbsorbed(_ snapshot: BusSnapshot) {
        for incident in snapshot.incidents {
            let failures = absorbed.new(of: incident, resolved: false)
            guard failures > 0 else { continue }
            let dimensions = [("service", incident.service), ("category", Self.metricValue(Self.category(of: incident)))]
            Counter(label: "errorbus_failures_absorbed_total", dimensions: dimensions, factory: metricsFactory ?? MetricsSystem.factory).increment(by: failures)
        }
    }

    /// Logs and counts one event, if it is a step of an incident's life or a dead letter, and
    /// counts the failures its incident absorbed since its last event; anything else (every
    /// canary, probe and parked job) costs a switch.
    public func report(_ event: BusEvent) {
        guard let incident = event.incident else {
            if event.kind == .budgetExhausted || event.kind == .parkingOverflow {
                logger.warning("\(event.kind): \(event.reason ?? "")")
            }
            return
        }
        let dimensions = [("service", incident.service), ("category", Self.metricValue(Self.category(of: incident)))]
        let failures = absorbed.new(of: incident, resolved: event.kind == .incidentResolved)
        if failures > 0 {
            Counter(label: "errorbus_failures_absorbed_total", dimensions: dimensions, factory: metricsFactory ?? MetricsSystem.factory).increment(by: failures)
        }
        switch event.kind {
        case .incidentOpened:
            Counter(label: "errorbus_incidents_opened_total", dimensions: dimensions, factory: metricsFactory ?? MetricsSystem.factory).increment()
            // One that paces holds nothing back: what the failure's text says happens next is not
            // what does.
            let next = incident.state == .pacing
                ? "\(incident.fingerprint.scope) serves others meanwhile: nothing is held back; the refused work is tried again at the pace it serves."
                : incident.text.next ?? ""
            logger.warning(
                "incident \(incident.id) opened: \(incident.text.title): \(incident.text.message) \(next)",
                metadata: metadata(event, incident)
            )
        case .pacingStarted:
            logger.notice(
                "incident \(incident.id) paces \(incident.service)'s work: \(incident.fingerprint.scope) refuses some of it and serves the rest; nothing is held back, the refused work is tried again at the pace it serves",
                metadata: metadata(event, incident)
            )
        case .escalated:
            Counter(label: "errorbus_incidents_escalated_total", dimensions: dimensions, factory: metricsFactory ?? MetricsSystem.factory).increment()
            logger.error(
                "incident \(incident.id) needs an operator: \(event.reason ?? incident.text.message) \(incident.text.next ?? "")",
                metadata: metadata(event, incident)
            )
        case .incidentResolved:
            Counter(label: "errorbus_incidents_resolved_total", dimensions: dimensions, factory: metricsFactory ?? MetricsSystem.factory).increment()
            logger.notice("\(Self.ending(of: incident))", metadata: metadata(event, incident))
        case .jobDeadLettered:
            Counter(label: "errorbus_jobs_dead_lettered_total", dimensions: dimensions, factory: metricsFactory ?? MetricsSystem.factory).increment()
            logger.debug("\(event.job.map { "\($0)" } ?? "a job") dead-lettered under incident \(incident.id): \(event.reason ?? "")")
        default:
            break
        }
    }

    /// The line that tells how an incident ended, in the words that are true of it:
    /// `incident 3 recovered after 42 s: 120 failures absorbed, 118 jobs released, 2 dead-lettered`.
    package static func ending(of incident: IncidentSnapshot) -> String {
        let counts = "\(count(incident.failures, "failure")) absorbed, \(count(incident.released, "job")) released, \(incident.deadLettered) dead-lettered"
        let after = DurationText.format(incident.age)
        return switch incident.resolution {
        case .recovered?: "incident \(incident.id) recovered after \(after): its cause is gone; \(counts)"
        case .discarded?: "incident \(incident.id) discarded by an operator after \(after), its cause not known to be gone: \(counts)"
        case .givenUp?: "incident \(incident.id) given up after \(after): its job failed on its own as often as it may and was set aside; \(counts)"
        case .closed?: "incident \(incident.id) closed after \(after), with no job left to try: \(counts)"
        // The jobs parked in durable queues of their own stay there, told by their owners.
        case .shutdown?: "incident \(incident.id) still open when the bus stopped, after \(after): \(counts)\(incident.parked > 0 ? ", \(count(incident.parked, "job")) still held" : "")"
        case let other: "incident \(incident.id) \(other.map { "\($0)" } ?? "resolved") after \(after): \(counts)"
        }
    }

    /// The category an incident is told and counted under: its category's kind, but `paused`
    /// for an operator's pause, which the bus runs as a `fatal` incident.
    package static func category(of incident: IncidentSnapshot) -> String {
        incident.fingerprint.cause == ErrorBus.operatorPauseCause ? "paused" : "\(incident.category.kind)"
    }

    /// A name as a metric's label value: `rateLimited` → `rate_limited`, `drop-oldest` →
    /// `drop_oldest`.
    package static func metricValue(_ name: String) -> String {
        var value = ""
        for character in name {
            if character.isUppercase {
                if !value.isEmpty { value.append("_") }
                value.append(contentsOf: character.lowercased())
            } else {
                value.append(character == "-" ? "_" : character)
            }
        }
        return value
    }

    /// `1 job`, `2 jobs`.
    package static func count(_ number: Int, _ noun: String) -> String {
        number == 1 ? "1 \(noun)" : "\(number) \(noun)s"
    }
}

/// The failures of each open incident a reporter has counted: each event carries its
/// incident's count, and what is new since the incident's last event (or the last
/// ``IncidentReporter/countAbsorbed(_:)``) is counted now.
private final class AbsorbedFailures: Sendable {
    private struct Tally {
        var counted: [IncidentID: Int] = [:]
        /// The incidents resolved lately: a snapshot taken before one resolved, read after,
        /// must not count its failures again.
        var resolved: Set<IncidentID> = []
        var resolvedInOrder: Deque<IncidentID> = []
    }

    /// How many resolved incidents are remembered.
    private static let resolvedRemembered = 1_024
    private let tally = Mutex(Tally())

    /// How many of the incident's failures are new since they were last counted; a resolved
    /// incident is counted one last time.
    func new(of incident: IncidentSnapshot, resolved: Bool) -> Int {
        tally.withLock { tally in
            guard !tally.resolved.contains(incident.id) else { return 0 }
            let before = tally.counted[incident.id] ?? 0
            if resolved {
                tally.counted[incident.id] = nil
                tally.resolved.insert(incident.id)
                tally.resolvedInOrder.append(incident.id)
                if tally.resolvedInOrder.count > Self.resolvedRemembered, let oldest = tally.resolvedInOrder.popFirst() {
                    tally.resolved.remove(oldest)
                }
            } else {
                tally.counted[incident.id] = max(before, incident.failures)
            }
            return max(0, incident.failures - before)
        }
    }
}
