import ErrorBus
import ErrorBusStore
import Foundation
import Metrics
package import Prometheus

/// Gauges read when metrics are asked for: the bus's state (its scopes' concurrency limits
/// included), the store's pending jobs and the outbox files sync cannot read.
enum StateGauges {
    static func update(_ snapshot: BusSnapshot, pending: [String: JobCounts], backlog: JobStore.Backlog, unreadableFiles: Int, now: Date = Date()) {
        // The files waiting for delivery: how many, their bytes, and how long the oldest waited.
        Gauge(label: "errorbus_sync_backlog_files").record(backlog.jobs)
        Gauge(label: "errorbus_sync_backlog_bytes").record(backlog.bytes)
        Gauge(label: "errorbus_sync_backlog_oldest_age_seconds").record(backlog.oldest.map { max(0, now.timeIntervalSince($0)) } ?? 0)
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

extension PrometheusMetricsFactory {
    /// The factory errorbusd bootstraps swift-metrics with: its histograms get buckets that fit
    /// what they measure (attempts 1…100; from arrival to delivery, 50 ms to a day).
    package static func errorbusd(registry: PrometheusCollectorRegistry) -> PrometheusMetricsFactory {
        var factory = PrometheusMetricsFactory(registry: registry)
        factory.valueHistogramBuckets[SyncService.deliveryAttemptsMetric] = [1, 2, 3, 5, 10, 20, 50, 100]
        factory.durationHistogramBuckets[SyncService.deliveryDelayMetric] = [
            .milliseconds(50), .milliseconds(250), .seconds(1), .seconds(5), .seconds(30), .seconds(60), .seconds(300),
            .seconds(900), .seconds(3_600), .seconds(4 * 3_600), .seconds(86_400),
        ]
        return factory
    }
}
