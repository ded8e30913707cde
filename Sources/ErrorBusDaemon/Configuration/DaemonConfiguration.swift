package import ErrorBus

/// Everything about errorbusd that an administrator can set, with a default for each.
///
/// The daemon gets it from ``load(file:environment:)``: defaults, overridden by
/// `/etc/errorbusd/errorbusd.yaml`, overridden by `ERRORBUSD_*` environment variables. Every key
/// is documented in the example file `etc/errorbusd/errorbusd.yaml`; the YAML spelling of a
/// property is its kebab-case form under its section (`sync.maxFileSize` is `sync.max-file-size`,
/// `bus.retryBudget.floorPerMinute` is `bus.retry-budget.floor-per-minute`), and its environment
/// variable is that key upper-cased with `_` for every `.` and `-`, after `ERRORBUSD_`
/// (`ERRORBUSD_SYNC_MAX_FILE_SIZE`).
package struct DaemonConfiguration: Sendable {
    /// The remote API (`api.*`).
    package var api: API
    /// The OAuth client credentials (`auth.*`).
    package var auth: Auth
    /// The outbox uploader (`sync.*`).
    package var sync: Sync
    /// The resource loader (`loader.*`).
    package var loader: Loader
    /// Where the durable state lives (`state.*`).
    package var state: State
    /// Graceful shutdown (`shutdown.*`).
    package var shutdown: Shutdown
    /// Logging (`log.*`).
    package var log: Log
    /// The control socket `errorbusctl` talks to (`control.*`).
    package var control: Control
    /// What healthy delivery is (`health.*`).
    package var health: Health
    /// The Prometheus scrape endpoint (`metrics.*`).
    package var metrics: Metrics
    /// The ErrorBus's policies (`bus.*`): back-off, rate limits, reachability, release, retry
    /// budget, bounds. Its `fallback` and `firstIncidentID` are not configuration; they keep
    /// their defaults here.
    package var bus: ErrorBusConfiguration

    /// Creates a configuration; every part defaults to the built-in defaults.
    package init(
        api: API = API(),
        auth: Auth = Auth(),
        sync: Sync = Sync(),
        loader: Loader = Loader(),
        state: State = State(),
        shutdown: Shutdown = Shutdown(),
        log: Log = Log(),
        control: Control = Control(),
        health: Health = Health(),
        metrics: Metrics = Metrics(),
        bus: ErrorBusConfiguration = ErrorBusConfiguration()
    ) {
        self.api = api
        self.auth = auth
        self.sync = sync
        self.loader = loader
        self.state = state
        self.shutdown = shutdown
        self.log = log
        self.control = control
        self.health = health
        self.metrics = metrics
        self.bus = bus
    }
}

extension DaemonConfiguration: Equatable {
    /// Compares every setting. `ErrorBusConfiguration` is not `Equatable` (its `fallback` is a
    /// closure), so its settings are compared one by one and the closure is left out.
    package static func == (lhs: DaemonConfiguration, rhs: DaemonConfiguration) -> Bool {
        lhs.api == rhs.api
            && lhs.auth == rhs.auth
            && lhs.sync == rhs.sync
            && lhs.loader == rhs.loader
            && lhs.state == rhs.state
            && lhs.shutdown == rhs.shutdown
            && lhs.log == rhs.log
            && lhs.control == rhs.control
            && lhs.health == rhs.health
            && lhs.metrics == rhs.metrics
            && lhs.bus.hasSameSettings(as: rhs.bus)
    }
}

extension ErrorBusConfiguration {
    /// Whether every setting is the same; the `fallback` closure cannot be compared and is left
    /// out.
    func hasSameSettings(as other: ErrorBusConfiguration) -> Bool {
        backoff == other.backoff
            && rateLimit == other.rateLimit
            && reachability == other.reachability
            && concurrency == other.concurrency
            && release == other.release
            && retryBudget == other.retryBudget
            && isolation == other.isolation
            && maxParkedJobs == other.maxParkedJobs
            && deadLetterGroupingWindow == other.deadLetterGroupingWindow
            && eventBufferSize == other.eventBufferSize
            && resolvedIncidentHistory == other.resolvedIncidentHistory
            && firstIncidentID == other.firstIncidentID
            && grouping == other.grouping
    }
}
