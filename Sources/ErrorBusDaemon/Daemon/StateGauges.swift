import ErrorBus
import ErrorBusStore
import Metrics

/// Gauges read when metrics are asked for: the bus's state (its scopes' concurrency limits
/// included), the store's pending jobs and the outbox files sync cannot read.
enum StateGauges {
    static func update(_ snapshot: BusSnapshot, pending: [String: JobCounts], unreadableFiles: Int) {
        Gauge(label: "errorbus_sync_unreadable_files").record(unreadableFiles)
        Gauge(label: "errorbus_incidents_open").record(snapshot.incidents.count)
        Gauge(label: "errorbus_jobs_parked").record(snapshot.parkedJobs)
        Gauge(label: "errorbus_retry_budget_tokens").record(snapshot.retryBudgetTokens)
        // Each scope's adaptive concurrency: how many of its jobs may run at once, run, and wait.
        for scope in snapshot.concurrency {
            let dimensions = [("scope", scope.scope)]
            Gauge(label: "errorbus_concurrency_limit", dimensions: dimensions).record(scope.limit)
            Gauge(label: "errorbus_concurrency_in_flight", dimensions: dimensions).record(scope.inFlight)
            Gauge(label: "errorbus_concurrency_waiting", dimensions: dimensions).record(scope.waiting)
        }
        for (service, counts) in pending {
            for state in [JobState.queued, .inFlight, .deadLettered] {
                // The store keeps the jobs the bus holds in flight: those are parked.
                let count = state == .inFlight ? max(0, counts[state] - (snapshot.heldByService[service] ?? 0)) : counts[state]
                Gauge(label: "errorbus_jobs", dimensions: [("service", service), ("state", state.rawValue)]).record(count)
            }
        }
    }
}
