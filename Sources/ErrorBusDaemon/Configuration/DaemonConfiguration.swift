package import ErrorBus

/// Everything about errorbusd that an administrator can set, with a default for each.
///
/// The daemon gets it from ``load(file:environment:credentialSource:)``: defaults, overridden by
/// `/etc/errorbusd/errorbusd.yaml`, overridden by `ERRORBUSD_*` environment variables. Every key
/// is declared in its section's table (``sections``), from which the reference and the example
/// file `etc/errorbusd/errorbusd.yaml` are generated; the YAML spelling of a property is its
/// kebab-case form under its section (`sync.maxFileSize` is `sync.max-file-size`), and its
/// environment variable is that key upper-cased with `_` for every `.` and `-`, after
/// `ERRORBUSD_` (`ERRORBUSD_SYNC_MAX_FILE_SIZE`).
package struct DaemonConfiguration: Sendable, Equatable {
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
