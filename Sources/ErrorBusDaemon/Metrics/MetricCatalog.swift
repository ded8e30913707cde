/// Every metric family errorbusd serves, with the help text of its `# HELP` line: the one
/// list the exposition, `docs/monitoring.md` and the shipped Prometheus rules are checked
/// against (a test compares it with a scrape).
package enum MetricCatalog {
    package enum Kind: String, Sendable {
        case counter, gauge, histogram
    }

    package struct Family: Sendable {
        package let name: String
        package let kind: Kind
        package let help: String
    }

    package static let families: [Family] = [
        // The incidents' story, counted by the library's reporter (service, category).
        .init(name: "errorbus_incidents_opened_total", kind: .counter, help: "Incidents opened, by service and category."),
        .init(name: "errorbus_incidents_escalated_total", kind: .counter, help: "Incidents that came to need an operator, by service and category."),
        .init(name: "errorbus_incidents_resolved_total", kind: .counter, help: "Incidents resolved (recovered, discarded, given up or closed), by service and category."),
        .init(name: "errorbus_failures_absorbed_total", kind: .counter, help: "Failures absorbed by incidents, counted as each happens, by service and category."),
        .init(name: "errorbus_jobs_dead_lettered_total", kind: .counter, help: "Jobs set aside as dead letters, by service and category (overflow: set aside to make room)."),
        // Sync.
        .init(name: "errorbus_sync_delivered_total", kind: .counter, help: "Outbox files delivered to the API."),
        .init(name: "errorbus_sync_expired_files_total", kind: .counter, help: "Outbox files given up because they waited longer than sync.max-age."),
        .init(name: "errorbus_sync_overflow_files_total", kind: .counter, help: "Outbox files the backlog had no room for, by sync.backlog.overflow policy."),
        .init(name: "errorbus_sync_dead_letters_pruned_total", kind: .counter, help: "Dead letters given up and their files removed, by the sync.dead-letters limit that pruned them."),
        .init(name: "errorbus_sync_delivery_delay_seconds", kind: .histogram, help: "Time from a file's arrival in the outbox to its delivery."),
        .init(name: "errorbus_sync_delivery_attempts", kind: .histogram, help: "Upload attempts a delivered file took."),
        .init(name: "errorbus_sync_backlog_files", kind: .gauge, help: "Outbox files waiting for delivery (those the store could not queue included)."),
        .init(name: "errorbus_sync_backlog_bytes", kind: .gauge, help: "Bytes of the outbox files waiting for delivery (those the store could not queue included)."),
        .init(name: "errorbus_sync_backlog_oldest_age_seconds", kind: .gauge, help: "How long the oldest file waiting for delivery has waited; 0 when none waits."),
        .init(name: "errorbus_sync_unreadable_files", kind: .gauge, help: "Outbox files sync cannot read (permissions, a directory, a broken link)."),
        .init(name: "errorbus_sync_bandwidth_limit_bytes_per_second", kind: .gauge, help: "The rate sync.bandwidth allows upload bodies now, all uploads together; 0 without a limit."),
        .init(name: "errorbus_sync_unqueued_files", kind: .gauge, help: "Outbox files the store could not queue (its disk full, read-only or failing); 0 once they are queued."),
        // What the host keeps and the bus holds.
        .init(name: "errorbus_jobs", kind: .gauge, help: "Jobs the host keeps, by service and state (queued, in_flight, parked, dead_lettered)."),
        .init(name: "errorbus_incidents_open", kind: .gauge, help: "Open incidents, by service, category and scope."),
        .init(name: "errorbus_incident_oldest_age_seconds", kind: .gauge, help: "How long the oldest open incident of a service, category and scope has been open."),
        .init(name: "errorbus_incidents_needing_operator", kind: .gauge, help: "Open incidents that need an operator, by service, category and scope."),
        .init(name: "errorbus_retry_budget_tokens", kind: .gauge, help: "Tokens left in the retry budget."),
        .init(name: "errorbus_concurrency_limit", kind: .gauge, help: "How many jobs of a scope may run at once (adaptive)."),
        .init(name: "errorbus_concurrency_in_flight", kind: .gauge, help: "Jobs of a scope running now."),
        .init(name: "errorbus_concurrency_waiting", kind: .gauge, help: "Jobs of a scope waiting for a free slot."),
        // Health: what errorbusctl health says.
        .init(name: "errorbus_health_status", kind: .gauge, help: "The health verdict: 0 OK, 1 WARNING, 2 CRITICAL."),
        .init(name: "errorbus_health_check_value", kind: .gauge, help: "Each health check's measure (seconds, jobs, dead letters waiting, incidents, a percentage, or bytes)."),
        .init(name: "errorbus_health_check_status", kind: .gauge, help: "Each health check's status: 0 OK, 1 WARNING, 2 CRITICAL."),
        .init(name: "errorbus_health_check_threshold", kind: .gauge, help: "Each health check's warning and critical levels (health.*); absent when unset."),
        // The process.
        .init(name: "errorbus_build_info", kind: .gauge, help: "1, labelled with the version errorbusd runs."),
        .init(name: "process_cpu_seconds_total", kind: .counter, help: "User and system CPU time spent, in seconds."),
        .init(name: "process_resident_memory_bytes", kind: .gauge, help: "Resident memory size in bytes."),
        .init(name: "process_virtual_memory_bytes", kind: .gauge, help: "Virtual memory size in bytes."),
        .init(name: "process_start_time_seconds", kind: .gauge, help: "Start time of the process since the Unix epoch, in seconds."),
        .init(name: "process_open_fds", kind: .gauge, help: "Open file descriptors."),
        .init(name: "process_max_fds", kind: .gauge, help: "The limit on open file descriptors."),
    ]

    /// Help text by family name.
    package static let help: [String: String] = Dictionary(uniqueKeysWithValues: families.map { ($0.name, $0.help) })
}
