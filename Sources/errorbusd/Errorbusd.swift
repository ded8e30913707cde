import ArgumentParser
import ErrorBusDaemon
import Foundation
import Logging

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
        let configuration: DaemonConfiguration
        do {
            configuration = try await DaemonConfiguration.load(file: config, environment: environment)
        } catch {
            FileHandle.standardError.write(Data("errorbusd: \(error)\n".utf8))
            throw ExitCode(ConfigurationError.exitCode)
        }
        if checkConfig {
            print("\(config): the configuration can be used")
            return
        }
        let level = configuration.log.level
        LoggingSystem.bootstrap { label in
            var handler = StreamLogHandler.standardError(label: label)
            handler.logLevel = level
            return handler
        }
        let daemon = Daemon(
            configuration: configuration,
            configurationFile: config,
            environment: environment,
            logger: Logger(label: "errorbusd"),
            startedAt: startedAt
        )
        try await daemon.run()
    }
}
