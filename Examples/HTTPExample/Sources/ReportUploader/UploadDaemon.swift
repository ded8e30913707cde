public import AsyncHTTPClient
public import ErrorBus
import ErrorBusHTTP
public import Logging
public import ServiceLifecycle
import UnixSignals

/// The daemon: one bus that probes the API with `APIProbe`, the uploader, the incident reporter,
/// in one service group that SIGTERM and SIGINT stop.
public struct UploadDaemon: Sendable {
    /// The bus the uploads run through.
    public let bus: ErrorBus
    /// The service that sends the reports.
    public let uploader: ReportUploader
    /// The reporter, the uploader and the bus, in the order they start.
    public let group: ServiceGroup

    /// - Parameter client: a client made with `HTTPClient.Configuration.errorbusAPI()`; the
    ///   caller shuts it down after the daemon stopped.
    public init(api: ReportAPI, client: HTTPClient, logger: Logger) {
        // sample: http-service-group
        // While the API cannot be reached, the bus asks the probe (`GET /healthz`, 204) instead
        // of retrying every upload; the probe answers for the API's origin only.
        let probe = APIProbe(configuration: api.probe, client: client, logger: logger)
        let bus = ErrorBus(probe: probe, logger: logger)
        let uploader = ReportUploader(bus: bus, api: api, client: client, logger: logger)
        let group = ServiceGroup(configuration: .init(
            services: [
                // First, so that it stops last and tells the incidents the bus ends.
                .init(service: IncidentReporter(bus: bus, logger: logger)),
                .init(service: uploader),
                // Last, so that it stops first: every job it still holds ends with `.shutdown`.
                .init(service: bus),
            ],
            gracefulShutdownSignals: [.sigterm, .sigint],
            logger: logger
        ))
        // end sample
        self.bus = bus
        self.uploader = uploader
        self.group = group
    }

    /// Runs the daemon until each of `reports` has its outcome, or until SIGTERM or SIGINT;
    /// returns the outcomes it saw, in the order they came.
    public func upload(_ reports: [Report]) async throws -> [(Report, ReportUploader.Outcome)] {
        try await withThrowingTaskGroup { tasks in
            tasks.addTask { try await group.run() }
            for report in reports { uploader.enqueue(report) }
            var outcomes: [(Report, ReportUploader.Outcome)] = []
            for await outcome in uploader.outcomes {
                outcomes.append(outcome)
                if outcomes.count == reports.count { break }
            }
            await group.triggerGracefulShutdown()
            try await tasks.waitForAll()
            return outcomes
        }
    }
}
