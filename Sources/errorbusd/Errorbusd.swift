import ArgumentParser
import ErrorBusDaemon

/// errorbusd: keeps a host's background work with a remote API going through outages.
@main
struct Errorbusd: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "errorbusd",
        abstract: "Keeps a host's uploads, downloads and credentials with a remote API going through outages.",
        version: ErrorBusVersion.current
    )

    func run() async throws {}
}
