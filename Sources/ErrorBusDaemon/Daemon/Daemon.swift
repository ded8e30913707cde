import ErrorBusUnits
import AsyncHTTPClient
import ErrorBusControl
import ErrorBusHTTP
import ErrorBusStore
import ErrorBusSupport
#if canImport(Glibc)
import Glibc
#endif
import ErrorBus
import Foundation
package import Logging
import NIOCore
import NIOPosix
import NIOSSL
import ServiceLifecycle
package import Systemd
package import Prometheus
import UnixSignals

/// errorbusd: the bus and the services, assembled into one service group.
///
/// Work starts in ``run()``; SIGTERM and SIGINT shut it down gracefully (no new work, uploads under
/// way finish within `shutdown.drain-timeout`, every state change on disk), SIGHUP reloads the
/// configuration without touching parked or queued work.
package struct Daemon: Sendable {
    private let configuration: DaemonConfiguration
    private let configurationFile: String?
    private let environment: [String: String]
    private let logger: Logger
    private let startedAt: ContinuousClock.Instant
    private let notifier: SystemdNotifier
    private let metrics: PrometheusCollectorRegistry?
    private let watchdogInterval: Duration?

    /// - Parameters:
    ///   - configuration: The configuration, already loaded and valid.
    ///   - configurationFile: Where it came from, to read it again on SIGHUP.
    ///   - environment: The environment it was read with.
    ///   - startedAt: When the process started, to report how long it took to be ready.
    ///   - notifier: Where readiness, status and watchdog pings go: `$NOTIFY_SOCKET` by default,
    ///     nowhere outside systemd.
    ///   - watchdogInterval: systemd's `WATCHDOG_USEC`, if it set one.
    ///   - metrics: The registry the process bootstrapped swift-metrics with, for `GetMetrics`.
    package init(
        configuration: DaemonConfiguration,
        configurationFile: String?,
        environment: [String: String],
        logger: Logger,
        startedAt: ContinuousClock.Instant = .now,
        notifier: SystemdNotifier = SystemdNotifier(),
        watchdogInterval: Duration? = nil,
        metrics: PrometheusCollectorRegistry? = nil
    ) {
        self.metrics = metrics
        self.notifier = notifier
        self.watchdogInterval = watchdogInterval
        self.configuration = configuration
        self.configurationFile = configurationFile
        self.environment = environment
        self.logger = logger
        self.startedAt = startedAt
    }

    /// Runs until a shutdown signal, then stops gracefully.
    package func run() async throws {
        let configuration = self.configuration
        if configuration.sync.parkedInMemory != DaemonConfiguration.Sync().parkedInMemory {
            logger.warning("sync.parked-in-memory is deprecated and ignored: every upload an incident holds waits in the state's queue, at no memory cost. Remove it; the next release refuses it.")
        }
        try Self.prepareDirectories(configuration)
        let activated = try SocketActivation.fromEnvironment().first(named: DaemonConfiguration.Control.socketName)
        let wait = StoreWait(notifier: notifier, controlSocket: activated?.fileDescriptor, logger: logger)
        guard let (store, lastIncident) = try await wait.untilOpen({ try await self.openStore() }) else { return }
        var busConfiguration = configuration.bus
        busConfiguration.firstIncidentID = (lastIncident ?? 0) + 1
        let http = RoutedHTTPClient(configuration: Self.httpConfiguration(configuration), routes: configuration.api.routes)
        do {
            let bus = ErrorBus(configuration: busConfiguration, logger: logger)
            let auth = AuthService(settings: .init(configuration), http: http, bus: bus, logger: logger)
            await bus.setProbe(Self.probe(configuration, http: http, auth: auth, logger: logger))
            await bus.setAuthenticator(auth)
            let sync = SyncService(settings: .init(configuration), store: store, bus: bus, auth: auth, http: http, logger: logger)
            let loader = LoaderService(settings: .init(configuration), store: store, bus: bus, auth: auth, http: http, logger: logger)
            let network = NetworkChangeMonitor(logger: logger) { await bus.networkChanged() }
            let manager = ServiceManager(notifier: notifier, logger: logger)
            let health = HealthMonitor(
                levels: configuration.health,
                store: store,
                bus: bus,
                stateDirectory: configuration.state.directory,
                overflow: sync.overflow,
                unqueued: sync.unqueued,
                progress: sync.progress
            )
            let reload = ReloadService(
                file: configurationFile,
                environment: environment,
                current: configuration,
                auth: auth,
                sync: sync,
                loader: loader,
                manager: manager,
                health: health,
                logger: logger
            )
            let controlSocket = ControlSocketReadiness()
            let incidentLog = IncidentLog(bus: bus, store: store, logger: logger)
            let controlService = ControlService(
                bus: bus,
                store: store,
                sync: sync,
                auth: auth,
                reload: reload,
                realm: configuration.api.realm,
                authorization: ControlAuthorization(group: configuration.control.group),
                startedAt: Date(),
                metrics: metrics,
                health: health,
                reporter: incidentLog.reporter,
                logger: logger
            )
            let control = ControlServer(
                control: controlService,
                configuration: configuration.control,
                activated: activated,
                listening: controlSocket,
                logger: logger
            )
            var supervision: [ServiceGroupConfiguration.ServiceConfiguration] = [
                // A SIGTERM or SIGINT that arrived while errorbusd started, sent again now that the
                // group handles them.
                .init(service: EarlySignals.Replay(logger: logger)),
                .init(service: Readiness(
                    startedAt: startedAt,
                    bus: bus,
                    manager: manager,
                    controlSocket: controlSocket,
                    health: health,
                    parked: { snapshot in (try? ParkedJobs(snapshot, store: store)) ?? ParkedJobs(snapshot) },
                    logger: logger
                )),
            ]
            if let listen = configuration.metrics.listen {
                let listener = MetricsListener(address: listen, exposition: { try await controlService.exposition().text }, logger: logger)
                supervision.append(.init(service: listener, successTerminationBehavior: .ignore, failureTerminationBehavior: .ignore))
            }
            if let interval = watchdogInterval {
                supervision.append(.init(service: Watchdog(interval: interval, bus: bus, manager: manager, logger: logger)))
            }

            // The incident log first and the bus second, so they stop last: the services hand
            // the bus their final outcomes on the way out, and the log tells the incidents the
            // bus's stop ended (their counts as they stood then).
            let group = ServiceGroup(configuration: .init(
                services: [
                    .init(service: incidentLog),
                    .init(service: bus),
                    .init(service: network, successTerminationBehavior: .ignore, failureTerminationBehavior: .ignore),
                    .init(service: auth),
                    .init(service: sync),
                    .init(service: loader),
                    .init(service: reload),
                    // Before Readiness, which waits for it to listen; stops before the services.
                    .init(service: control),
                ] + supervision,
                gracefulShutdownSignals: [.sigterm, .sigint],
                cancellationSignals: [],
                logger: logger
            ).withShutdownDeadline(configuration.shutdown.drainTimeout))
            do {
                try await group.run()
            } catch is CancellationError {
                // The group is cancelled only when shutdown.drain-timeout runs out (errorbusd has
                // no cancellation signal): a service that was still stopping may end with this.
                // What it left is queued again below, as at any stop.
            }
            try await Self.stop(store, drainTimeout: configuration.shutdown.drainTimeout, logger: logger)
        } catch {
            try? await http.shutdown()
            throw error
        }
        try await http.shutdown()
        logger.info("errorbusd stopped")
    }

    /// Opens the store and recovers what the last run left behind, if it ended without stopping
    /// (a crash, kill -9, a power loss): a stop queues its jobs again and ends its incidents
    /// itself. Returns the store and the last incident's number.
    private func openStore() async throws -> (JobStore, UInt64?) {
        let store = try JobStore(directory: configuration.state.directory, logger: logger, version: ErrorBusVersion.current)
        do {
            let interrupted = try store.requeueInterrupted()
            if interrupted > 0 {
                logger.notice("\(IncidentReporter.count(interrupted, "upload")) under way in errorbusd's last run, which ended without stopping, queued again")
            }
            IncidentLog.tellEnded(try store.closeOpenIncidents(as: .interrupted), how: "with errorbusd's last run, which ended without stopping", logger: logger)
            return (store, try store.lastIncidentID())
        } catch {
            // Closed before a next try opens it again (a full disk that frees up).
            try? await store.close()
            throw error
        }
    }

    /// Once every service has stopped: queues again the uploads the drain timeout cut off (the
    /// jobs left in flight), ends the incidents still open, says so, and closes the store. The
    /// jobs parked under those incidents stay parked: the next start's sync queues them again.
    static func stop(_ store: JobStore, drainTimeout: Duration, logger: Logger) async throws {
        try await store.flush()
        let cutOff = try store.requeueInterrupted()
        if cutOff > 0 {
            logger.warning("\(IncidentReporter.count(cutOff, "upload")) still under way when shutdown.drain-timeout (\(DurationText.format(drainTimeout))) ran out: queued again for the next start")
        }
        let parked = try store.counts().parked
        if parked > 0 {
            logger.notice("\(IncidentReporter.count(parked, "job")) parked under incidents, queued again at the next start")
        }
        IncidentLog.tellEnded(try store.closeOpenIncidents(as: .shutdown), how: "as errorbusd stopped", logger: logger)
        try await store.close()
    }

    /// The `errno` that best says why the daemon stopped on `error`, for systemd's `ERRNO=`.
    package static func errnoCode(of error: any Error) -> CInt {
        switch error {
        case let error as SystemCallError: error.errnoCode
        case let error as SystemdError where error.errnoCode > 0: error.errnoCode
        case let error as StoreError where error.isDiskFull: ENOSPC
        case let error as StoreError where error.isReadOnly: EROFS
        case let error as StoreError where error.isPermissionDenied: EACCES
        case let error as StoreError where error.isInUse: EBUSY
        case is ConfigurationError: EINVAL
        default: EIO
        }
    }

    /// The exit status that says why errorbusd stopped on `error`. A start that cannot succeed
    /// until an administrator acts has a status errorbusd.service does not restart on
    /// (`RestartPreventExitStatus=`): 65 (EX_DATAERR) for a store that is damaged or written by a
    /// newer errorbusd, 73 (EX_CANTCREAT) for a state directory errorbusd's user cannot write
    /// (read-only, another owner). Anything else is 1, which systemd restarts.
    package static func exitCode(of error: any Error) -> Int32 {
        switch error {
        case let error as StoreError where error.isNewer || error.isCorrupt: 65
        case let error as StoreError where error.isReadOnly || error.isPermissionDenied: 73
        case let error as SystemCallError where [EACCES, EPERM, EROFS].contains(error.errnoCode): 73
        case let error as CocoaError where [.fileWriteNoPermission, .fileWriteVolumeReadOnly, .fileReadNoPermission].contains(error.code): 73
        default: 1
        }
    }

    /// Creates the outbox and resource directories if they are missing.
    static func prepareDirectories(_ configuration: DaemonConfiguration) throws {
        for directory in [configuration.sync.outbox, configuration.loader.directory, configuration.state.directory] {
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        }
        if case .move(let sent) = configuration.sync.afterDelivery {
            try FileManager.default.createDirectory(atPath: sent, withIntermediateDirectories: true)
        }
    }

    static func httpConfiguration(_ configuration: DaemonConfiguration) -> HTTPClient.Configuration {
        // No redirects: on an API call or the probe, one is a captive portal or a proxy.
        var http = HTTPClient.Configuration.errorbusAPI(
            connectTimeout: TimeAmount(configuration.api.connectTimeout),
            readTimeout: TimeAmount(configuration.api.requestTimeout)
        )
        http.connectionPool = .init(idleTimeout: .seconds(60), concurrentHTTP1ConnectionsPerHostSoftLimit: 2 * configuration.sync.concurrency + 8)
        // Only auth.method mtls reads one.
        let identity = configuration.auth.clientIdentity
        if configuration.api.caFile != nil || identity != nil {
            var tls = TLSConfiguration.makeClientConfiguration()
            if let caFile = configuration.api.caFile {
                tls.additionalTrustRoots = [.file(caFile)]
            }
            if let identity {
                tls.certificateChain = identity.certificateChain.map { .certificate($0) }
                tls.privateKey = .privateKey(identity.privateKey)
            }
            http.tlsConfiguration = tls
        }
        return http
    }

    /// What the reachability gate asks: the API's probe URL, or, for object storage
    /// (`aws-sigv4`), a signed `HEAD` of the bucket (the probe URL if set, else the base URL);
    /// for a paused sync, the local check.
    static func probe(_ configuration: DaemonConfiguration, http: RoutedHTTPClient, auth: AuthService, logger: Logger) -> APIProbe {
        let api = configuration.api
        let objectStore = configuration.auth.method == .awsSigV4
        var settings = APIProbe.Configuration(
            baseURL: api.baseURL,
            probePath: objectStore ? api.configuredProbeURL ?? api.baseURL : api.probeURL ?? "/healthz",
            timeout: api.connectTimeout + .seconds(1)
        )
        if objectStore { settings.check = .objectStore }
        var probe = APIProbe(configuration: settings, client: http, localChecks: [SyncService.service: Self.localCheck(configuration)], logger: logger)
        if objectStore {
            probe.signRequest = { request in
                await auth.currentSignIn.signer?.sign(&request, payloadHash: AWSSignatureV4.emptyPayloadHash)
            }
        }
        return probe
    }

    /// The condition a paused (`fatal`) sync waits for: the state directory writable with
    /// `state.min-free-space` free, the outbox readable.
    static func localCheck(_ configuration: DaemonConfiguration) -> @Sendable () async -> ProbeResult {
        let state = configuration.state.directory
        let minimum = configuration.state.minFreeSpace
        let outbox = configuration.sync.outbox
        return {
            do throws(SystemCallError) {
                let info = try SystemCall.statvfs(state)
                let free = Int64(info.f_bavail) * Int64(info.f_frsize)
                guard free >= minimum else {
                    return .unreachable(
                        reason: "\(state) has \(ByteCountText.format(Int(free))) free, less than state.min-free-space (\(ByteCountText.exact(minimum)))"
                    )
                }
            } catch {
                return .unreachable(reason: "cannot examine \(state): \(error)")
            }
            do throws(SystemCallError) {
                try SystemCall.access(state, W_OK)
            } catch {
                return .unreachable(reason: "\(state) is not writable: \(error)")
            }
            do throws(SystemCallError) {
                try SystemCall.access(outbox, R_OK | X_OK)
            } catch {
                return .unreachable(reason: "\(outbox) is not readable: \(error)")
            }
            return .reachable
        }
    }
}

extension ServiceGroupConfiguration {
    /// Graceful shutdown may take this long before the group cancels what is left.
    func withShutdownDeadline(_ deadline: Duration) -> ServiceGroupConfiguration {
        var configuration = self
        configuration.maximumGracefulShutdownDuration = deadline
        return configuration
    }
}
