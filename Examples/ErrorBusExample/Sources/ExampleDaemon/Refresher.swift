import ErrorBus
import Logging
import ServiceLifecycle

/// Keeps the remote setting fresh: fetches it every `interval`, keeping the last good copy when
/// a fetch fails.
actor Refresher: Service {
    /// The service's name on the bus.
    static let service = "refresher"

    private let bus: ErrorBus
    private let api: SimulatedAPI
    private let credentials: Credentials
    private let interval: Duration
    private let clock: any Clock<Duration>
    private let logger: Logger
    private var refreshes = 0

    /// The setting in force: the last one fetched.
    private(set) var setting: Setting?

    // sample: responder
    /// A setting the API sends malformed is worth neither an incident nor a dead letter: the
    /// refresher keeps the last good one and asks again at the next interval.
    static let keepLastGoodSetting = ClosureResponder { failure, _ in
        failure.category.kind == .invalid ? .handle(.proceed) : .pass
    }
    // end sample

    init(
        bus: ErrorBus,
        api: SimulatedAPI,
        credentials: Credentials,
        interval: Duration,
        clock: any Clock<Duration> = ContinuousClock(),
        logger: Logger
    ) {
        self.bus = bus
        self.api = api
        self.credentials = credentials
        self.interval = interval
        self.clock = clock
        self.logger = logger
    }

    /// Refreshes at once, then every `interval`, until the group shuts down.
    func run() async {
        while !Task.isShuttingDownGracefully, !Task.isCancelled {
            await refresh()
            do {
                try await cancelWhenGracefulShutdown { [clock, interval] in
                    try await clock.sleep(for: interval)
                }
            } catch {
                break
            }
        }
        logger.info("refresher stopped: setting \(setting.map { "\($0)" } ?? "never fetched")")
    }

    // sample: refresher-perform
    /// Fetches the setting once and waits for the answer, however long an incident holds the
    /// job, but no longer than one interval: by then the next refresh is due.
    func refresh() async {
        refreshes += 1
        let job = Job(id: "setting-\(refreshes)", service: Self.service, scope: api.host, realm: "api", expiresAfter: interval)
        do throws(JobStopped) {
            let fetched = try await bus.perform(job) { [api, credentials] () async throws(RefreshError) -> Setting in
                do throws(APIFailure) {
                    return try await api.fetchSetting(token: credentials.token)
                } catch {
                    throw RefreshError(error, host: api.host)
                }
            }
            if fetched != setting { logger.info("setting now \(fetched)") }
            setting = fetched
        } catch {
            // The last good setting stays in force.
            switch error.reason {
            case .handledByResponder: logger.info("setting not refreshed (\(error.failure?.text.message ?? "")): the last good one stays")
            case .expired: logger.info("setting not refreshed within \(interval): the next refresh asks again")
            case .shutdown, .taskCancelled: break
            default: logger.warning("setting not refreshed: \(error)")
            }
        }
    }
    // end sample
}
