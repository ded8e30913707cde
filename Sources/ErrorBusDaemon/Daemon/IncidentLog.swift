import ErrorBus
import ErrorBusStore
import ErrorBusSupport
import Foundation
import Logging
import ServiceLifecycle

/// Tells the story of each incident: a row per incident in the store's history, and the
/// library's ``IncidentReporter`` lines (one per lifecycle step: opened, needs an operator,
/// resolved) and counters, with journal fields.
///
/// In the journal each line carries a fixed `MESSAGE_ID` per step, explained by
/// `systemd/errorbusd.catalog` (`journalctl -x`), and the fields `ERRORBUS_INCIDENT` (the
/// host's number), `ERRORBUS_INCIDENT_ID` (the incident's UUID, unique across a fleet and across
/// runs), `ERRORBUS_SERVICE`, `ERRORBUS_CATEGORY`, `ERRORBUS_SCOPE`, and where they apply
/// `ERRORBUS_FAILURES`, `ERRORBUS_JOBS` and `ERRORBUS_NEXT_ATTEMPT_USEC` (wall-clock µs):
/// `journalctl MESSAGE_ID=e44d68978ee64cfc9599df6a0d606e34 ERRORBUS_SERVICE=sync`.
struct IncidentLog: Service {
    let bus: ErrorBus
    let store: JobStore
    let logger: Logger
    /// The library's reporter: its lines and counters.
    let reporter: IncidentReporter

    init(bus: ErrorBus, store: JobStore, logger: Logger) {
        self.bus = bus
        self.store = store
        self.logger = logger
        self.reporter = IncidentReporter(bus: bus, logger: logger, metadata: Self.journalFields)
        reporter.declareCounters(services: ControlService.services)
    }

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
            let held = IncidentReporter.count(incident.parked, "job")
            logger.notice(
                "incident \(incident.id) ended \(how), unresolved (\(incident.state), \(held) held): its jobs are queued again; a cause still there opens a new incident",
                metadata: fields(ofEnded: incident)
            )
        }
    }

    /// The journal fields of the entry that ends an incident a run left open.
    static func fields(ofEnded incident: StoredIncident) -> Logger.Metadata {
        var metadata: Logger.Metadata = [
            "MESSAGE_ID": "\(ended)",
            "ERRORBUS_INCIDENT": "\(incident.id)",
            "ERRORBUS_SERVICE": "\(incident.service)",
            "ERRORBUS_CATEGORY": "\(incident.cause == ErrorBus.operatorPauseCause ? "paused" : incident.category)",
            "ERRORBUS_SCOPE": "\(incident.scope)",
            "ERRORBUS_FAILURES": "\(incident.failures)",
            "ERRORBUS_JOBS": "\(incident.parked)",
        ]
        // None for an incident an errorbusd recorded before incidents had one.
        if let uuid = incident.uuid {
            metadata["ERRORBUS_INCIDENT_ID"] = "\(uuid)"
        }
        return metadata
    }

    /// Wall-clock time (`CLOCK_REALTIME`) in microseconds, `delay` from now.
    static func realtimeMicroseconds(in delay: Duration) -> Int64 {
        Int64(((Date().timeIntervalSince1970 + delay.timeInterval) * 1_000_000).rounded())
    }

    /// Tells the incidents already open, then every event until the bus stops (its last events
    /// end the incidents still open), then waits for its own turn to stop.
    func run() async throws {
        let subscription = await bus.subscribe()
        for incident in subscription.initialSnapshot.incidents {
            record(BusEvent(kind: .incidentOpened, incident: incident))
        }
        for await event in subscription {
            record(event)
        }
        try? await gracefulShutdown()
    }

    /// Writes the history row of an incident's lifecycle step, then has the library's reporter
    /// tell and count the event.
    func record(_ event: BusEvent) {
        if let incident = event.incident, [.incidentOpened, .escalated, .incidentResolved].contains(event.kind) {
            // The history first, so that a reader who saw the line finds the row.
            do {
                _ = try store.recordIncident(incident)
            } catch {
                logger.error("cannot record incident \(incident.id) in the history: \(error)")
            }
        }
        reporter.report(event)
    }

    /// The journal fields of an incident's line.
    @Sendable static func journalFields(of event: BusEvent, _ incident: IncidentSnapshot) -> Logger.Metadata {
        let endedByStop = incident.resolution == .shutdown
        let messageID = switch event.kind {
        case .incidentOpened: opened
        case .escalated: escalated
        default: endedByStop ? ended : resolved
        }
        var metadata: Logger.Metadata = [
            "MESSAGE_ID": "\(messageID)",
            "ERRORBUS_INCIDENT": "\(incident.id)",
            "ERRORBUS_INCIDENT_ID": "\(incident.uuid.uuidString.lowercased())",
            "ERRORBUS_SERVICE": "\(incident.service)",
            "ERRORBUS_CATEGORY": "\(IncidentReporter.category(of: incident))",
            "ERRORBUS_SCOPE": "\(incident.fingerprint.scope)",
        ]
        if let next = incident.next, event.kind != .incidentResolved {
            metadata["ERRORBUS_NEXT_ATTEMPT_USEC"] = "\(realtimeMicroseconds(in: next.delay))"
        }
        switch event.kind {
        case .incidentOpened:
            break
        case .escalated:
            metadata["ERRORBUS_JOBS"] = "\(incident.parked + incident.deadLettered)"
        default:
            metadata["ERRORBUS_FAILURES"] = "\(incident.failures)"
            // Those it still held when errorbusd stopped (queued again), or those it released.
            metadata["ERRORBUS_JOBS"] = "\(endedByStop ? incident.parked : incident.released)"
        }
        return metadata
    }
}
