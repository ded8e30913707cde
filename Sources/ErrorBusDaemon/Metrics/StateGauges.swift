import ErrorBus
import ErrorBusControl
import ErrorBusStore
import ErrorBusSupport
import Foundation
import Metrics
import Synchronization

/// The gauges set when metrics are asked for, from their owners: the bus's state (incidents,
/// scopes' concurrency), the store's jobs and backlog, the health verdict, the process.
///
/// Some families' series come and go (an incident's scope, a scope's concurrency, a health
/// level a reload unset): a series gone since the last scrape is removed, not left at its last
/// value, so that `errorbus_incidents_open` tells only the incidents open now.
final class StateGauges: Sendable {
    /// The series last set of each family whose series come and go, by their labels' text.
    private let exposed = Mutex<[String: [String: [(String, String)]]]>([:])
    private let process = ProcessMetrics()

    struct State {
        var snapshot: BusSnapshot
        var health: Control.Health
        var pending: [String: JobCounts]
        var backlog: JobStore.Backlog
        /// The outbox files the store refused to queue: they wait as the backlog's do.
        var unqueued = UnqueuedFiles.Summary()
        var unreadableFiles: Int
        /// The rate `sync.bandwidth` allows upload bodies now; `nil`: no limit.
        var bandwidth: Int64? = nil
        var services: [String]
    }

    func update(_ state: State, now: Date = Date()) {
        let snapshot = state.snapshot
        // The files waiting for delivery: how many, their bytes, and how long the oldest waited;
        // those the store refused to queue included.
        let unqueued = state.unqueued
        let oldest = [state.backlog.oldest, unqueued.oldest].compactMap { $0 }.min()
        Gauge(label: "errorbus_sync_backlog_files").record(state.backlog.jobs + unqueued.files)
        Gauge(label: "errorbus_sync_backlog_bytes").record(state.backlog.bytes + unqueued.bytes)
        Gauge(label: "errorbus_sync_backlog_oldest_age_seconds").record(oldest.map { max(0, now.timeIntervalSince($0)) } ?? 0)
        Gauge(label: "errorbus_sync_unreadable_files").record(state.unreadableFiles)
        Gauge(label: "errorbus_sync_unqueued_files").record(unqueued.files)
        Gauge(label: "errorbus_sync_bandwidth_limit_bytes_per_second").record(state.bandwidth ?? 0)
        Gauge(label: "errorbus_retry_budget_tokens").record(snapshot.retryBudgetTokens)

        // Every job the host keeps, once, in its state in the store.
        for service in state.services {
            let counts = state.pending[service] ?? JobCounts()
            let states: [(String, Int)] = [
                ("queued", counts.queued),
                ("in_flight", counts.inFlight),
                ("parked", counts.parked),
                ("dead_lettered", counts.deadLettered),
            ]
            for (name, count) in states {
                Gauge(label: "errorbus_jobs", dimensions: [("service", service), ("state", name)]).record(count)
            }
        }

        // The open incidents, by what an alert asks of them: service, category, scope.
        var open: [String: (labels: [(String, String)], count: Int, oldest: Duration, needOperator: Int)] = [:]
        for incident in snapshot.incidents {
            let labels = [
                ("service", incident.service),
                ("category", IncidentReporter.metricValue(IncidentReporter.category(of: incident))),
                ("scope", incident.fingerprint.scope),
            ]
            let key = Self.key(labels)
            var entry = open[key] ?? (labels, 0, .zero, 0)
            entry.count += 1
            entry.oldest = max(entry.oldest, incident.age)
            if incident.state == .needsOperator { entry.needOperator += 1 }
            open[key] = entry
        }
        expose("errorbus_incidents_open", open.values.map { ($0.labels, Double($0.count)) })
        expose("errorbus_incident_oldest_age_seconds", open.values.map { ($0.labels, $0.oldest.timeInterval) })
        expose("errorbus_incidents_needing_operator", open.values.map { ($0.labels, Double($0.needOperator)) })

        // Each scope's adaptive concurrency: how many of its jobs may run at once, run, and wait.
        let scopes = snapshot.concurrency.map { (labels: [("scope", $0.scope)], scope: $0) }
        expose("errorbus_concurrency_limit", scopes.map { ($0.labels, Double($0.scope.limit)) })
        expose("errorbus_concurrency_in_flight", scopes.map { ($0.labels, Double($0.scope.inFlight)) })
        expose("errorbus_concurrency_waiting", scopes.map { ($0.labels, Double($0.scope.waiting)) })

        // The verdict of errorbusctl health, and each check with its levels.
        Gauge(label: "errorbus_health_status").record(state.health.status.severity)
        let checks = state.health.checks.map { (labels: [("check", IncidentReporter.metricValue($0.name))], check: $0) }
        expose("errorbus_health_check_value", checks.map { ($0.labels, $0.check.value) })
        expose("errorbus_health_check_status", checks.map { ($0.labels, Double($0.check.status.severity)) })
        expose("errorbus_health_check_threshold", checks.flatMap { labels, check in
            [("warning", check.warning), ("critical", check.critical)].compactMap { level, value in
                value.map { (labels + [("level", level)], $0) }
            }
        })

        Gauge(label: "errorbus_build_info", dimensions: [("version", ErrorBusVersion.current)]).record(1)
        process.update()
    }

    /// Sets one family's series, and removes those it had at the last scrape and has no more.
    private func expose(_ name: String, _ series: [(labels: [(String, String)], value: Double)]) {
        var current: [String: [(String, String)]] = [:]
        for (labels, value) in series {
            Gauge(label: name, dimensions: labels).record(value)
            current[Self.key(labels)] = labels
        }
        let gone = exposed.withLock { exposed in
            defer { exposed[name] = current }
            return (exposed[name] ?? [:]).filter { current[$0.key] == nil }.map(\.value)
        }
        for labels in gone {
            Gauge(label: name, dimensions: labels).destroy()
        }
    }

    private static func key(_ labels: [(String, String)]) -> String {
        labels.map { "\($0.0)=\($0.1)" }.joined(separator: "\u{1}")
    }
}
