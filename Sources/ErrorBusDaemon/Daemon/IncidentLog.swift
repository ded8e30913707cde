import ErrorBus
import ErrorBusStore
import ErrorBusSupport
import Foundation
import Logging
import Metrics
import ServiceLifecycle

/// Tells the story of each incident: one log line per lifecycle step (opened, needs an operator,
/// resolved), never one per failure, a row per incident in the store's history, and the
/// swift-metrics counters of those steps and of dead letters, by service and category.
///
/// In the journal each line carries a fixed `MESSAGE_ID` per step, explained by
/// `systemd/errorbusd.catalog` (`journalctl -x`), and the fields `ERRORBUS_INCIDENT`,
/// `ERRORBUS_SERVICE`, `ERRORBUS_CATEGORY`, `ERRORBUS_SCOPE`, and where they apply
/// `ERRORBUS_FAILURES`, `ERRORBUS_JOBS` and `ERRORBUS_NEXT_ATTEMPT_USEC` (wall-clock µs):
/// `journalctl MESSAGE_ID=e44d68978ee64cfc9599df6a0d606e34 ERRORBUS_SERVICE=sync`.
struct IncidentLog: Service {
    let bus: ErrorBus
    let store: JobStore
    let logger: Logger

    /// `MESSAGE_ID` of "incident opened".
    static let opened = "e44d68978ee64cfc9599df6a0d606e34"
    /// `MESSAGE_ID` of "incident needs an operator".
    static let escalated = "070b087487244f118d9a75293993bfec"
    /// `MESSAGE_ID` of "incident resolved".
    static let resolved = "922e01c430864cbe9849f334ff057a57"
    /// `MESSAGE_ID` of "incident ended with errorbusd's run": still open when errorbusd stopped,
    /// or when a run ended without stopping.
    static let ended = "d46628f4a1034fc6869d9b3c0893800e"

    /// Tells the end of incidents a run left open (``JobStore/closeOpenIncidents(as:at:)``), one
    /// entry each, so that every incident's story in the journal has an end.
    static func tellEnded(_ incidents: [StoredIncident], how: String, logger: Logger) {
        for incident in incidents {
            let held = count(incident.parked, "job")
            logger.notice(
                "incident \(incident.id) ended \(how), unresolved (\(incident.state), \(held) held): its jobs are queued again; a cause still there opens a new incident",
                metadata: [
                    "MESSAGE_ID": "\(ended)",
                    "ERRORBUS_INCIDENT": "\(incident.id)",
                    "ERRORBUS_SERVICE": "\(incident.service)",
                    "ERRORBUS_CATEGORY": "\(incident.cause == ErrorBus.operatorPauseCause ? "paused" : incident.category)",
                    "ERRORBUS_SCOPE": "\(incident.scope)",
                    "ERRORBUS_FAILURES": "\(incident.failures)",
                    "ERRORBUS_JOBS": "\(incident.parked)",
                ]
            )
        }
    }

    /// Wall-clock time (`CLOCK_REALTIME`) in microseconds, `delay` from now.
    static func realtimeMicroseconds(in delay: Duration) -> Int64 {
        Int64(((Date().timeIntervalSince1970 + delay.timeInterval) * 1_000_000).rounded())
    }

    func run() async throws {
        let subscription = await bus.subscribe()
        for await event in subscription.cancelOnGracefulShutdown() {
            record(event)
        }
    }

    /// Writes the event's line and history row, if it is a lifecycle step; counts it. Anything
    /// else (every canary, probe and parked job) costs a switch.
    func record(_ event: BusEvent) {
        guard let incident = event.incident else {
            if event.kind == .parkingOverflow || event.kind == .budgetExhausted {
                logger.warning("\(event.kind): \(event.reason ?? "")")
            }
            return
        }
        let messageID: String
        switch event.kind {
        case .incidentOpened: messageID = Self.opened
        case .escalated: messageID = Self.escalated
        case .incidentResolved: messageID = Self.resolved
        case .jobDeadLettered:
            count(event, incident)
            // One line per job, so only at debug level: the incident's own entries tell the story.
            logger.debug("\(event.job.map { "\($0)" } ?? "a job") dead-lettered under incident \(incident.id): \(event.reason ?? "")")
            return
        default:
            return
        }
        count(event, incident)
        // The history first, so that a reader who saw the line finds the row.
        do {
            _ = try store.recordIncident(incident, at: Date())
        } catch {
            logger.error("cannot record incident \(incident.id) in the history: \(error)")
        }
        var metadata: Logger.Metadata = [
            "MESSAGE_ID": "\(messageID)",
            "ERRORBUS_INCIDENT": "\(incident.id)",
            "ERRORBUS_SERVICE": "\(incident.service)",
            "ERRORBUS_CATEGORY": "\(Self.category(of: incident))",
            "ERRORBUS_SCOPE": "\(incident.fingerprint.scope)",
        ]
        if let next = incident.next, event.kind != .incidentResolved {
            metadata["ERRORBUS_NEXT_ATTEMPT_USEC"] = "\(Self.realtimeMicroseconds(in: next.delay))"
        }
        switch event.kind {
        case .incidentOpened:
            logger.warning("incident \(incident.id) opened: \(incident.text.title): \(incident.text.message) \(incident.text.next ?? "")", metadata: metadata)
        case .escalated:
            metadata["ERRORBUS_JOBS"] = "\(incident.parked + incident.deadLettered)"
            logger.error("incident \(incident.id) needs an operator: \(event.reason ?? incident.text.message) \(incident.text.next ?? "")", metadata: metadata)
        default:
            metadata["ERRORBUS_FAILURES"] = "\(incident.failures)"
            metadata["ERRORBUS_JOBS"] = "\(incident.released)"
            let resolution = incident.resolution.map { "\($0)" } ?? "resolved"
            logger.notice("incident \(incident.id) \(resolution) after \(DurationText.format(incident.age)): \(Self.count(incident.failures, "failure")) absorbed, \(Self.count(incident.released, "job")) released, \(incident.deadLettered) dead-lettered", metadata: metadata)
        }
    }

    /// `1 job`, `2 jobs`.
    static func count(_ number: Int, _ noun: String) -> String {
        number == 1 ? "1 \(noun)" : "\(number) \(noun)s"
    }

    /// The category an incident is told and counted under: its category's kind, but `paused`
    /// for an operator's pause, which the bus runs as a `fatal` incident.
    static func category(of incident: IncidentSnapshot) -> String {
        incident.fingerprint.cause == ErrorBus.operatorPauseCause ? "paused" : "\(incident.category.kind)"
    }

    /// The counters `GetMetrics` exposes (errorbusd bootstraps swift-metrics with Prometheus).
    private func count(_ event: BusEvent, _ incident: IncidentSnapshot) {
        let dimensions = [("service", incident.service), ("category", Self.category(of: incident))]
        switch event.kind {
        case .incidentOpened:
            Counter(label: "errorbus_incidents_opened_total", dimensions: dimensions).increment()
        case .escalated:
            Counter(label: "errorbus_incidents_escalated_total", dimensions: dimensions).increment()
        case .incidentResolved:
            Counter(label: "errorbus_incidents_resolved_total", dimensions: dimensions).increment()
            Counter(label: "errorbus_failures_absorbed_total", dimensions: dimensions).increment(by: incident.failures)
        case .jobDeadLettered:
            Counter(label: "errorbus_jobs_dead_lettered_total", dimensions: dimensions).increment()
        default:
            break
        }
    }
}
