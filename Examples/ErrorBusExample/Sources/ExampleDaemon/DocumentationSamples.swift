import ErrorBus
import Logging

// The code blocks of the ErrorBus articles (Sources/ErrorBus/ErrorBus.docc) that are not part of
// the daemon itself. Each compiles here, on the example's types, and the article quotes the lines
// between its markers (scripts/lib/samples.py checks that they agree).

/// ErrorBus.md: the overview.
func overview(api: SimulatedAPI, credentials: Credentials, report: Report, logger: Logger) async {
    @Sendable func upload(_ report: Report) async throws(UploadError) {
        try await Uploader.upload(report, to: api, with: credentials)
    }
    // sample: overview
    let bus = ErrorBus(logger: logger)
    await bus.setProbe(HealthProbe(api: api), forScope: "api.example.net")
    let job = Job(id: "report-42", service: "uploader", scope: "api.example.net", realm: "api")
    do throws(JobStopped) {
        try await bus.perform(job) { try await upload(report) }   // waits out outages and 401s
    } catch {
        print(error.reason, error.failure?.text.title ?? "")       // a dead letter, a job limit…
    }
    // end sample
}

/// Events.md: a subscriber of its own, in place of the ``IncidentReporter``.
func printIncidents(of bus: ErrorBus) async {
    // sample: events-subscribe
    let subscription = await bus.subscribe()
    for incident in subscription.initialSnapshot.incidents {
        print("incident \(incident.id) open: \(incident.text.title)")
    }
    for await event in subscription {
        guard let incident = event.incident else { continue }
        switch event.kind {
        case .incidentOpened: print("incident \(incident.id) opened: \(incident.text.title)")
        case .escalated: print("incident \(incident.id) needs an operator: \(event.reason ?? "")")
        case .incidentResolved: print("incident \(incident.id) \(incident.resolution?.rawValue ?? "resolved")")
        default: break
        }
    }
    // end sample
}

/// Responders.md: a responder that rewrites a failure.
func treatForbiddenAsRateLimited(on bus: ErrorBus) async {
    // sample: responder-rewrite
    await bus.connect(ClosureResponder { failure, _ in
        guard failure.cause == "http403" else { return .pass }
        var rewritten = failure
        rewritten.category = .rateLimited(retryAfter: .seconds(30))
        return .rewrite(rewritten)
    }, to: "uploader")
    // end sample
}

/// ConcurrencyLimits.md: the concurrency of a daemon alone with its API.
func loneDaemonConfiguration() -> ErrorBusConfiguration {
    // sample: concurrency-lone-daemon
    var configuration = ErrorBusConfiguration()
    configuration.concurrency = .init(maximum: 16, initial: 16)   // no slow start, still halved under back-pressure
    // or .fixed(16): 16 in flight whatever the API answers
    // end sample
    return configuration
}

/// RetryBudget.md: the retry budget of a host alone with its API.
func loneHostBus(logger: Logger) -> ErrorBus {
    // sample: retry-budget-lone-host
    var configuration = ErrorBusConfiguration()
    // Up to 100 canaries at the back-off's pace once successes have filled the bucket
    // (20 at the start), then one every 3 s.
    configuration.retryBudget = .init(floorPerMinute: 20, capacity: 100)
    let bus = ErrorBus(configuration: configuration, logger: logger)
    // end sample
    return bus
}
