import ErrorBus
import Logging
import ServiceLifecycle
import UnixSignals

/// The daemon: one bus, the two services that run their work through it, the incident
/// reporter, in one service group that SIGTERM and SIGINT stop.
struct ExampleDaemon {
    let bus: ErrorBus
    let uploader: Uploader
    let refresher: Refresher
    let group: ServiceGroup

    init(api: SimulatedAPI, secret: String, refreshInterval: Duration, logger: Logger) async {
        // sample: service-group
        let bus = ErrorBus(logger: logger)
        // The API's host has its own probe, its realm its own authenticator.
        await bus.setProbe(HealthProbe(api: api), forScope: api.host)
        let credentials = Credentials(api: api, secret: secret)
        await bus.setAuthenticator(credentials, forRealm: "api")

        let uploader = Uploader(bus: bus, api: api, credentials: credentials, logger: logger)
        let refresher = Refresher(bus: bus, api: api, credentials: credentials, interval: refreshInterval, logger: logger)
        await bus.connect(Refresher.keepLastGoodSetting, to: Refresher.service)
        let group = ServiceGroup(configuration: .init(
            services: [
                // First, so that it stops last and tells the incidents the bus ends.
                .init(service: IncidentReporter(bus: bus, logger: logger)),
                .init(service: uploader),
                .init(service: refresher),
                // Last, so that it stops first: every job it still holds ends with `.shutdown`,
                // and the services waiting for them can stop.
                .init(service: bus),
            ],
            gracefulShutdownSignals: [.sigterm, .sigint],
            logger: logger
        ))
        // end sample
        self.bus = bus
        self.uploader = uploader
        self.refresher = refresher
        self.group = group
    }

    /// Runs until SIGTERM or SIGINT.
    func run() async throws {
        try await group.run()
    }
}
