import ArgumentParser
import ErrorBusControl
import ErrorBusDaemon
import ErrorBusStore
import Foundation
import Logging
import Metrics
import Prometheus
import Systemd
import Varlink

/// errorbusd: keeps a host's background work with a remote API going through outages.
@main
struct Errorbusd: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "errorbusd",
        abstract: "Uploads an outbox, keeps resources fresh and holds an OAuth token for a remote API, through outages, rate limits and expired credentials.",
        discussion: """
            Runs in the foreground until SIGTERM or SIGINT (graceful shutdown) and reloads its \
            configuration on SIGHUP: the file, then the *.yaml files in the directory beside it named \
            after it with .d (errorbusd.yaml.d), in name order, then ERRORBUSD_* variables; \
            errorbusd.yaml(5) describes every key. A configuration that cannot be used exits with \
            status 78 (EX_CONFIG), naming the file, the line, the key and why.

            --downgrade-store VERSION turns the state database back into a form the older errorbusd \
            VERSION reads, before going back to it (errorbusd stopped; apt's downgrade asks for it). \
            With --dry-run it only says whether VERSION reads the database as it is.

            Exit status:
              0   stopped by SIGTERM or SIGINT; with --check-config: the configuration
                  can be used; with --downgrade-store: done, or nothing to do
              1   stopped on an error (logged, and told to systemd with ERRNO=); with
                  --downgrade-store --dry-run: VERSION cannot read the store as it is
              64  invalid arguments
              65  the state database cannot be used: damaged, or written by a newer
                  errorbusd in a form this one cannot read (EX_DATAERR)
              73  the state directory cannot be written: read-only, or not errorbusd's
                  user's (EX_CANTCREAT)
              78  the configuration cannot be used (EX_CONFIG)
            65, 73 and 78 need an administrator: errorbusd.service does not restart on them.
            """,
        version: ErrorBusVersion.current
    )

    @Option(name: [.short, .long], help: "The configuration file.")
    var config: String = "/etc/errorbusd/errorbusd.yaml"

    @Flag(help: "Check the configuration and exit: 0 when it can be used, 78 when it cannot.")
    var checkConfig = false

    @Flag(help: "With --check-config: print every key's value and where it came from (a file and line, a variable, the default).")
    var show = false

    @Option(help: ArgumentHelp("Print the reference of every configuration key and exit: yaml (the example file, every key at its default), markdown or man (errorbusd.yaml(5)).", valueName: "format"))
    var configReference: ConfigurationReference.Format?

    @Option(help: ArgumentHelp("Turn the state database (state.directory) back into a form errorbusd VERSION reads, and exit. errorbusd must be stopped.", valueName: "version"))
    var downgradeStore: String?

    @Flag(help: "With --downgrade-store: only say whether that version reads the state database as it is (exit 0) or not (exit 1); changes nothing, errorbusd may run.")
    var dryRun = false

    @Option(help: ArgumentHelp("With --downgrade-store: the state directory, instead of the configuration's state.directory.", valueName: "directory"))
    var stateDirectory: String?

    func validate() throws {
        if let downgradeStore, ReleaseVersion(validating: downgradeStore) == nil {
            throw ValidationError("--downgrade-store takes a version, such as 0.2.0; got '\(downgradeStore)'")
        }
        if downgradeStore == nil, dryRun || stateDirectory != nil {
            throw ValidationError("--dry-run and --state-directory go with --downgrade-store")
        }
    }

    func run() async throws {
        if configReference == nil, downgradeStore == nil, !checkConfig {
            // First: until the service group handles SIGTERM and SIGINT, their default action
            // would end errorbusd at once, killed by the signal, its store left open.
            try EarlySignals.hold()
        }
        if let configReference {
            print(ConfigurationReference.text(configReference, date: Self.today()), terminator: "")
            return
        }
        let startedAt = ContinuousClock.now
        let environment = ProcessInfo.processInfo.environment
        if let downgradeStore {
            let status = StoreDowngrade(release: downgradeStore, dryRun: dryRun).run(
                directory: try stateDirectory ?? Self.stateDirectory(configurationFile: config, environment: environment)
            )
            if status != 0 { throw ExitCode(status) }
            return
        }
        // The manager's socket from $NOTIFY_SOCKET, written without waiting: sd_notify blocks
        // while the manager's queue is full, and errorbusd must not block a cooperative thread
        // on it (a dropped STATUS= is logged; the next one follows).
        let notifier = environment["NOTIFY_SOCKET"].map { SystemdNotifier(socketPath: $0) } ?? .disabled
        let configuration: DaemonConfiguration
        let sources: ConfigurationSources
        do {
            // A check outside the service has no $CREDENTIALS_DIRECTORY: it reads the client secret
            // where errorbusd.service loads it from, beside the configuration file.
            (configuration, sources) = try DaemonConfiguration.loadWithSources(
                file: config,
                environment: environment,
                credentialSource: checkConfig ? Self.directory(of: config) : nil
            )
        } catch {
            FileHandle.standardError.write(Data("errorbusd: \(error)\n".utf8))
            if !checkConfig {
                try? notifier.failing(errno: EINVAL, status: "configuration unusable: \(error)")
                Self.answerWaitingControlCalls(with: error)
            }
            throw ExitCode(ConfigurationError.exitCode)
        }
        // log.target journal names a journald that must be there: without its socket, entries
        // would go nowhere an administrator who asked for the journal looks.
        let logDestination = configuration.log.destination(standardErrorIsJournal: SystemdEnvironment.current.standardErrorIsJournal)
        if configuration.log.target == .journal, !JournalWriter.journalSocketExists {
            let problem = ConfigurationError(
                key: "log.target",
                reason: "is journal, but \(JournalWriter.journalSocketPath) does not exist (no systemd-journald here); "
                    + "set log.target to stderr or auto, or start systemd-journald first"
            )
            FileHandle.standardError.write(Data("errorbusd: \(problem)\n".utf8))
            if !checkConfig {
                try? notifier.failing(errno: EINVAL, status: "configuration unusable: \(problem)")
                Self.answerWaitingControlCalls(with: problem)
            }
            throw ExitCode(ConfigurationError.exitCode)
        }
        if checkConfig {
            print("\(config): the configuration can be used")
            if show {
                print(configuration.describe(sources))
            }
            let auth = configuration.auth
            print("sign-in: \(auth.method.rawValue)")
            print("upload: \(configuration.api.upload.method.rawValue) \(configuration.api.uploadContract.url)")
            for header in configuration.api.upload.headers {
                for case .secret(let name, _) in header.value.parts {
                    print("header \(header.name): credential \"\(name)\" (errorbusd.service loads it only with a drop-in: LoadCredential=\(name):/etc/errorbusd/\(name))")
                }
            }
            if let kind = DaemonConfiguration.Auth.secretKind(of: auth.method) {
                switch auth.secretSource {
                case .credentialSource(let name, let path):
                    print("\(kind.what): \(path) (errorbusd.service loads it as its credential \"\(name)\")")
                case .credential(let name, let path):
                    print("\(kind.what): the credential \"\(name)\" (\(path))")
                case .file(let path):
                    print("\(kind.what): \(path) (\(kind.fileKey))")
                case .given:
                    break
                }
            }
            return
        }
        Self.bootstrapLogging(level: configuration.log.level, destination: logDestination)
        let metrics = PrometheusCollectorRegistry()
        MetricsSystem.bootstrap(ErrorbusdMetricsFactory(registry: metrics))
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
            if error is StoreError {
                // The store cannot be opened: a start that fails before serving anyone.
                Self.answerWaitingControlCalls(with: Control.storeUnavailable.error(.init(reason: "\(error)")))
            }
            throw ExitCode(Daemon.exitCode(of: error))
        }
    }

    /// `state.directory` as the configuration sets it, read as `--check-config` reads it.
    static func stateDirectory(configurationFile: String, environment: [String: String]) throws -> String {
        do {
            return try DaemonConfiguration.loadWithSources(
                file: configurationFile,
                environment: environment,
                credentialSource: directory(of: configurationFile)
            ).0.state.directory
        } catch {
            FileHandle.standardError.write(Data("errorbusd: \(error)\n(give the state directory with --state-directory)\n".utf8))
            throw ExitCode(ConfigurationError.exitCode)
        }
    }

    /// Today, as a man page dates itself.
    static func today() -> String {
        Date().formatted(Date.FormatStyle(date: .long, time: .omitted, locale: Locale(identifier: "en_US_POSIX"), timeZone: .gmt))
    }

    /// The absolute directory `file` is in.
    static func directory(of file: String) -> String {
        let absolute = file.hasPrefix("/") ? file : FileManager.default.currentDirectoryPath + "/" + file
        return URL(fileURLWithPath: absolute).deletingLastPathComponent().path
    }

    /// Tells the clients whose calls started errorbusd by socket activation why it cannot run.
    ///
    /// Without an answer they would see their connection reset, and the calls left queued on the
    /// socket would make systemd start errorbusd again at once, until its start limit failed the
    /// socket unit and took the control socket away.
    static func answerWaitingControlCalls(with error: ConfigurationError) {
        answerWaitingControlCalls(with: Control.configurationUnusable.error(Control.ConfigurationProblem(error)))
    }

    /// Answers the calls waiting on the control socket with `error`, when errorbusd stops before
    /// it could serve them (a start that cannot succeed).
    static func answerWaitingControlCalls(with error: VarlinkError) {
        guard let socket = try? SocketActivation.fromEnvironment().first(named: DaemonConfiguration.Control.socketName) else { return }
        let answered = VarlinkServer.answerPendingCalls(on: socket.fileDescriptor, with: error)
        if answered > 0 {
            FileHandle.standardError.write(Data("errorbusd: told \(answered) control client(s) why it cannot run\n".utf8))
        }
    }

    /// Writes native journal entries or lines on standard error, as `log.target` decided
    /// (``DaemonConfiguration/Log/destination(standardErrorIsJournal:)``).
    static func bootstrapLogging(level: Logger.Level, destination: DaemonConfiguration.Log.Destination) {
        switch destination {
        case .journal:
            let writer = JournalWriter()
            LoggingSystem.bootstrap { label in
                var handler = JournalLogHandler(label: label, writer: writer, syslogIdentifier: "errorbusd")
                handler.logLevel = level
                return handler
            }
        case .standardError:
            LoggingSystem.bootstrap { _ in
                var handler = LineLogHandler()
                handler.logLevel = level
                return handler
            }
        }
    }
}

extension ConfigurationReference.Format: ExpressibleByArgument {}
