import ErrorBus
import Logging
import Metrics
import ServiceLifecycle

/// Counts what the bus's events say, with swift-metrics: incidents opened and resolved and
/// jobs dead-lettered, by service and category. Whatever backend the process bootstrapped
/// (errorbusd: Prometheus, read by `GetMetrics`) receives them; without one they cost nothing.
struct MetricsBridge: Service {
    let bus: ErrorBus

    func run() async throws {
        let subscription = await bus.subscribe()
        for await event in subscription.cancelOnGracefulShutdown() {
            guard let incident = event.incident else { continue }
            let dimensions = [("service", incident.service), ("category", "\(incident.category.kind)")]
            switch event.kind {
            case .incidentOpened:
                Counter(label: "errorbus_incidents_opened_total", dimensions: dimensions).increment()
            case .incidentResolved:
                Counter(label: "errorbus_incidents_resolved_total", dimensions: dimensions).increment()
                Counter(label: "errorbus_failures_absorbed_total", dimensions: dimensions).increment(by: incident.failures)
            case .escalated:
                Counter(label: "errorbus_incidents_escalated_total", dimensions: dimensions).increment()
            case .jobDeadLettered:
                Counter(label: "errorbus_jobs_dead_lettered_total", dimensions: dimensions).increment()
            default:
                continue
            }
        }
    }
}

/// Gauges read when metrics are asked for: the bus's state and the store's pending jobs.
enum StateGauges {
    static func update(_ snapshot: BusSnapshot, pending: [String: JobCounts]) {
        Gauge(label: "errorbus_incidents_open").record(snapshot.incidents.count)
        Gauge(label: "errorbus_jobs_parked").record(snapshot.parkedJobs)
        Gauge(label: "errorbus_retry_budget_tokens").record(snapshot.retryBudgetTokens)
        for (service, counts) in pending {
            for state in [JobState.queued, .inFlight, .deadLettered] {
                Gauge(label: "errorbus_jobs", dimensions: [("service", service), ("state", state.rawValue)]).record(counts[state])
            }
        }
    }
}
