import ArgumentParser
import Logging
import Sandbox
import ServiceLifecycle
import UnixSignals

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// `errorbus-sandbox`: serves the errorbus remote API on loopback and misbehaves on request.
@main
struct SandboxCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "errorbus-sandbox",
        abstract: "A local fault-injecting API server for errorbus demos, tests and benchmarks.",
        discussion: "The admin API under /admin sets faults and reads counters; see docs/sandbox.md."
    )

    @Option(help: "Address to listen on.")
    var host = "127.0.0.1"

    @Option(help: "Port to listen on; 0 picks a free one.")
    var port = 0

    @Option(help: ArgumentHelp("Write the bound port to this file (atomically) once listening.", valueName: "path"))
    var portFile: String?

    @Option(help: ArgumentHelp("Lifetime of issued access tokens.", valueName: "seconds"))
    var tokenLifetime = 3600

    @Option(help: "OAuth client id the token endpoint accepts.")
    var clientId = "errorbus"

    @Option(help: ArgumentHelp("File holding the client secret (trailing newline ignored); default 'sandbox-secret'.", valueName: "path"))
    var clientSecretFile: String?

    @Option(help: "trace, debug, info, notice, warning, error or critical.")
    var logLevel = "info"

    @Option(help: ArgumentHelp(
        "What the API can take, as PUT /admin/capacity takes it, e.g. '{\"concurrency\":8,\"queue\":32,\"serviceMs\":50}'.",
        valueName: "json"
    ))
    var capacity: String?

    func validate() throws {
        guard Logger.Level(rawValue: logLevel) != nil else {
            throw ValidationError("--log-level must be one of trace, debug, info, notice, warning, error, critical")
        }
        guard (0...65535).contains(port) else { throw ValidationError("--port must be between 0 and 65535") }
        guard tokenLifetime > 0 else { throw ValidationError("--token-lifetime must be positive") }
        if let capacity {
            do {
                _ = try CapacitySpec(json: capacity)
            } catch {
                throw ValidationError("--capacity: \(error.reason)")
            }
        }
    }

    func run() async throws {
        var rootLogger = Logger(label: "errorbus-sandbox") { StreamLogHandler.standardError(label: $0) }
        rootLogger.logLevel = Logger.Level(rawValue: logLevel) ?? .info
        let logger = rootLogger

        var configuration = SandboxConfiguration(host: host, port: port, clientID: clientId, tokenLifetime: .seconds(tokenLifetime))
        if let clientSecretFile {
            configuration.clientSecret = try Self.readSecret(clientSecretFile)
        }
        configuration.capacity = try capacity.map { json throws(CapacityError) in try CapacitySpec(json: json) }
        let portFile = self.portFile
        let server = SandboxServer(configuration: configuration, logger: logger) { port in
            guard let portFile else { return }
            do {
                try PortFile.write(port: port, to: portFile)
            } catch {
                logger.error("cannot write the port file", metadata: ["path": "\(portFile)", "error": "\(error)"])
            }
        }
        var groupConfiguration = ServiceGroupConfiguration(
            services: [server],
            gracefulShutdownSignals: [.sigterm, .sigint],
            logger: logger
        )
        // A `huge` or `slow` answer in flight must not hold the process up for long.
        groupConfiguration.maximumGracefulShutdownDuration = .seconds(5)
        let group = ServiceGroup(configuration: groupConfiguration)
        defer { portFile.map(PortFile.remove) }
        try await group.run()
    }

    private static func readSecret(_ path: String) throws -> String {
        let data: Data
        do {
            data = try Data(contentsOf: URL(fileURLWithPath: path))
        } catch {
            throw ValidationError("cannot read --client-secret-file \(path): \(error)")
        }
        var secret = String(decoding: data, as: UTF8.self)
        while secret.last == "\n" || secret.last == "\r" { secret.removeLast() }
        guard !secret.isEmpty else { throw ValidationError("--client-secret-file \(path) is empty") }
        return secret
    }
}
