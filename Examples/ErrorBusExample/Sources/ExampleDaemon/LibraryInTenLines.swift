import ErrorBus
import Logging

/// The README's "library in ten lines": a bus, one job run through it, and the bus's events.
func libraryInTenLines(api: SimulatedAPI, credentials: Credentials, report: Report, logger: Logger) async {
    // sample: readme-library
    let bus = ErrorBus(probe: HealthProbe(api: api), authenticator: credentials, logger: logger)
    let events = await bus.subscribe()
    await withDiscardingTaskGroup { group in
        group.addTask { await bus.run() }  // or put the bus in your ServiceGroup, last
        let job = Job(id: report.id, service: "uploader", scope: "api.example.net", realm: "api")
        do throws(JobStopped) {
            try await bus.perform(job) { try await Uploader.upload(report, to: api, with: credentials) }  // waits out outages, 401s
        } catch {
            print(error.evaluation, error.reason, error.failure?.text.title ?? "")  // a dead letter, a job limit…
        }
        group.cancelAll()  // stops the bus, which ends its events
    }
    for await event in events { print(event.kind, event.incident?.text.title ?? "") }
    // end sample
}
