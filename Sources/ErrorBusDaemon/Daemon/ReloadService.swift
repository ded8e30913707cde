import ErrorBus
import Logging
import ServiceLifecycle
import Systemd
import UnixSignals

/// Reloads the configuration on SIGHUP and hands each service its new settings. Parked and
/// queued work is untouched; a configuration that does not load is reported and the running one
/// kept.
actor ReloadService: Service {
    private let file: String?
    private let environment: [String: String]
    private var current: DaemonConfiguration
    private let auth: AuthService
    private let sync: SyncService
    private let loader: LoaderService
    private let manager: ServiceManager
    private let health: HealthMonitor
    private let logger: Logger

    init(
        file: String?,
        environment: [String: String],
        current: DaemonConfiguration,
        auth: AuthService,
        sync: SyncService,
        loader: LoaderService,
        manager: ServiceManager,
        health: HealthMonitor,
        logger: Logger
    ) {
        self.manager = manager
        self.health = health
        self.file = file
        self.environment = environment
        self.current = current
        self.auth = auth
        self.sync = sync
        self.loader = loader
        self.logger = logger
    }

    func run() async throws {
        let hangups = await UnixSignalsSequence(trapping: .sighup)
        // Trapped from here on; one that came while errorbusd started was held until now.
        if EarlySignals.takeReload() {
            logger.notice("SIGHUP arrived while errorbusd was starting: reloading")
            try? await reload()
        }
        for await _ in hangups.cancelOnGracefulShutdown() {
            // A configuration that does not load is logged, and the running one kept.
            try? await reload()
        }
    }

    /// Reads the configuration again and applies what can change while running; throws, and
    /// keeps the running configuration, when the new one cannot be used.
    func reload() async throws(ConfigurationError) {
        manager.send(.reloading())
        // READY=1 again whatever the outcome: a broken configuration leaves the running one.
        defer { manager.send(.ready) }
        let next: DaemonConfiguration
        do {
            next = try DaemonConfiguration.load(file: file, environment: environment)
        } catch {
            logger.error("reload failed, keeping the running configuration: \(error)")
            throw error
        }
        for change in Self.restartOnly(from: current, to: next) {
            logger.warning("\(change) changed: it applies when errorbusd restarts")
        }
        await auth.update(.init(next))
        await sync.update(.init(next))
        await loader.update(.init(next))
        health.update(next.health)
        current = next
        logger.notice("configuration reloaded", metadata: ["file": "\(file ?? "(none)")"])
    }

    /// The keys a running daemon cannot take over that changed (those its table marks as taking
    /// a restart), and the client certificate, whose file's content may change under one name.
    static func restartOnly(from old: DaemonConfiguration, to new: DaemonConfiguration) -> [String] {
        var changed = ConfigurationKeys.table.filter { $0.restart && !$0.isEqual(old, new) }.map(\.key)
        if old.auth.clientIdentity != new.auth.clientIdentity {
            changed.append("the client certificate and key (auth.method mtls)")
        }
        return changed
    }
}
