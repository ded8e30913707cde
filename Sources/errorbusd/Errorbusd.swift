import ArgumentParser
import ErrorBusDaemon
import Foundation
import Logging
import Metrics
import Prometheus
import Systemd

/// errorbusd: keeps a host's background work with a remote API going through outages.
@main
struct Errorbusd: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "errorbusd",
        abstract: "Uploads an outbox, keeps resources fresh and holds an OAuth token for a remote API, through outages, rate limits and expired credentials.",
        discussion: """
            Runs in the foreground until SIGTERM or SIGINT (graceful shutdown) and reloads its \
            configuration on SIGHUP. A configuration that cannot be used exits with status 78 \
            (EX_CONFIG), naming the file, the key and why.
            """,
        version: ErrorBusVersion.current
    )

    @Option(name: [.short, .long], help: "The configuration file.")
    var config: String = "/etc/errorbusd/errorbusd.yaml"

    @Flag(help: "Check the configuration and exit: 0 when it can be used, 78 when it cannot.")
    var checkConfig = false

    func run() async throws {
        let startedAt = ContinuousClock.now
        let environment = ProcessInfo.processInfo.environment
        // The manager's socket from $NOTIFY_SOCKET, written without waiting: sd_notify blocks
        // while the manager's queue is full, and errorbusd must not block a cooperative thread
        // on it (a dropped STATUS= is logged; the next one follows).
        let notifier = environment["NOTIFY_SOCKET"].map { SystemdNotifier(socketPath: $0) } ?? .disabled
        let configuration: DaemonConfiguration
        do {
            configuration = try DaemonConfiguration.load(file: config, environment: environment)
        } catch {
            FileHandle.standardError.write(Data("errorbusd: \(error)\n".utf8))
            if !checkConfig { try? notifier.failing(errno: EINVAL, status: "configuration unusable: \(error)") }
            throw ExitCode(ConfigurationError.exitCode)
        }
        if checkConfig {
            print("\(config): the configuration can be used")
            return
        }
        Self.bootstrapLogging(level: configuration.log.level)
        let metrics = PrometheusCollectorRegistry()
        MetricsSystem.bootstrap(PrometheusMetricsFactory(registry: metrics))
        let logger = Logger(label: "errorbusd")
        let daemon = Daemon(
            configuration: configuration,
            configurationFile: config,
            environment: environment,
            logger: logger,
            startedAt: startedAt,
            notifier: notifier,
            watchdogInterval: try? SystemdNotifier.watchdogInterval(),
            metrics: metrics
        )
        do {
            try await daemon.run()
        } catch {
            logger.critical("errorbusd stopped on an error: \(error)")
            try? notifier.failing(errno: Daemon.errnoCode(of: error), status: "failed: \(error)")
            throw error
        }
    }

    /// Writes to the journal natively when standard error is connected to it (systemd's
    /// `$JOURNAL_STREAM`), as lines on standard error otherwise.
    static func bootstrapLogging(level: Logger.Level) {
        if SystemdEnvironment.current.standardErrorIsJournal {
            let writer = JournalWriter()
            LoggingSystem.bootstrap { label in
                var handler = JournalLogHandler(label: label, writer: writer, syslogIdentifier: "errorbusd")
                handler.logLevel = level
                return handler
            }
        } else {
            LoggingSystem.bootstrap { label in
                var handler = StreamLogHandler.standardError(label: label)
                handler.logLevel = level
                return handler
            }
        }
    }
}
