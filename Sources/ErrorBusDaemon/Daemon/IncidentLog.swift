import ErrorBus
import Foundation
import Logging
import ServiceLifecycle

/// Tells the story of each incident: one log line per lifecycle step (opened, needs an operator,
/// resolved), never one per failure, and a row per incident in the store's history.
struct IncidentLog: Service {
    let bus: ErrorBus
    let store: JobStore
    let logger: Logger

    func run() async throws {
        let subscription = await bus.subscribe()
        for await event in subscription.cancelOnGracefulShutdown() {
            record(event)
        }
    }

    /// Writes the event's line and history row, if it is a lifecycle step.
    func record(_ event: BusEvent) {
        guard let incident = event.incident else {
            if event.kind == .parkingOverflow || event.kind == .budgetExhausted {
                logger.warning("\(event.kind): \(event.reason ?? "")")
            }
            return
        }
        let metadata: Logger.Metadata = [
            "incident": "\(incident.id)",
            "category": "\(incident.category.kind)",
            "scope": "\(incident.fingerprint.scope)",
            "service": "\(incident.service)",
        ]
        switch event.kind {
        case .incidentOpened:
            logger.warning("incident \(incident.id) opened: \(incident.text.title): \(incident.text.message) \(incident.text.next ?? "")", metadata: metadata)
        case .escalated:
            logger.error("incident \(incident.id) needs an operator: \(event.reason ?? incident.text.message) \(incident.text.next ?? "")", metadata: metadata)
        case .incidentResolved:
            let resolution = incident.resolution.map { "\($0)" } ?? "resolved"
            logger.notice("incident \(incident.id) \(resolution) after \(DurationText.format(incident.age)): \(incident.failures) failures absorbed, \(incident.released) jobs released, \(incident.deadLettered) dead-lettered", metadata: metadata)
        case .jobDeadLettered:
            logger.warning("\(event.job.map { "\($0)" } ?? "a job") dead-lettered under incident \(incident.id): \(event.reason ?? "")", metadata: metadata)
            return
        default:
            return
        }
        do {
            _ = try store.recordIncident(incident, at: Date())
        } catch {
            logger.error("cannot record incident \(incident.id) in the history: \(error)")
        }
    }
}
