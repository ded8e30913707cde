import ArgumentParser
import ErrorBusControl
import ErrorBusUnits
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// `errorbusctl`: see and steer errorbusd through its control socket (`io.errorbus.Control`).
@main
struct Errorbusctl: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "errorbusctl",
        abstract: "See and steer errorbusd through its control socket.",
        discussion: """
            Reading (status, incidents, incident, jobs, dead, watch, metrics, health, top) is open to anyone who can open \
            the socket; the commands that change something (retry, discard, cancel, pause, resume, \
            reauth, reload) need root or membership of errorbusd's control group.

            --json prints the daemon's reply as io.errorbus.Control defines it; watch prints one \
            JSON object per line. A command that fails prints instead, on standard output, one \
            object {"error": …, "reason": …} (error: failed, notFound, invalidArguments, notRunning, \
            timedOut, permissionDenied, configurationUnusable or storeUnavailable; reason: the line said \
            without --json) and exits with the status below. The interface with every type, method and \
            error explained: varlinkctl introspect /run/errorbusd/io.errorbus.Control io.errorbus.Control \
            (systemd 255 and later) or, with any systemd, the Python reference client \
            (pip install varlink): python3 -m varlink.cli help \
            unix:/run/errorbusd/io.errorbus.Control/io.errorbus.Control

            --timeout bounds every wait for errorbusd: connecting, and each answer. By default 5s \
            for the commands that read (status, incidents, incident, jobs, dead, metrics, health, \
            each refresh of top, and watch until it has the open incidents: then it waits for events \
            as long as they take), 30s for those that change something (their help says so; reauth: \
            60s, a sign-in with the API). A wait beyond it exits 75 (health: 3, UNKNOWN).

            health exits as a monitoring plugin does: 0 OK, 1 WARNING, 2 CRITICAL, 3 UNKNOWN (errorbusd \
            cannot be asked, or did not answer within --timeout).

            Exit status:
              0   success
              1   failure: any other error the daemon answered, e.g. a reload that failed
              4   not found: no such incident, job or service
              64  usage: invalid arguments, or a job id whose first characters more than one
                  job's id starts with
              69  errorbusd is not running (nothing listens on the socket, or it stopped
                  without answering)
              75  errorbusd did not answer within --timeout: it runs but does not answer
                  (stopped, hung or overloaded)
              77  permission denied (socket or method)
              78  errorbusd cannot start: its configuration is unusable (the reason is
                  printed)
            """,
        version: ErrorBusVersion.current,
        subcommands: [
            Status.self, Incidents.self, IncidentCommand.self, Jobs.self, Dead.self,
            Retry.self, Discard.self, Cancel.self, Pause.self, Resume.self, Reauth.self, Reload.self,
            Watch.self, MetricsCommand.self, HealthCommand.self, Top.self,
        ],
        defaultSubcommand: Status.self
    )

    /// The options every command takes, given before the command's name
    /// (`errorbusctl --json status`); each command declares them too, for after its name.
    @OptionGroup var options: GlobalOptions

    /// The commands' names, as typed.
    static var commandNames: [String] {
        configuration.subcommands.map { $0._commandName } + ["help"]
    }

    static func main() async {
        if let unknown = unknownCommand(in: Array(CommandLine.arguments.dropFirst())) {
            let names = commandNames.joined(separator: ", ")
            FileHandle.standardError.write(Data("errorbusctl: unknown command '\(unknown)'. Commands: \(names).\nSee 'errorbusctl --help'.\n".utf8))
            Self.exit(withError: ExitStatus.usage)
        }
        // swift-argument-parser's own entry point, as `@main` would call it.
        await main(nil)
    }

    /// Options of the root command whose value is the next argument: ours, and
    /// swift-argument-parser's own.
    static let optionsWithValue: Set<String> = ["--socket", "--timeout", "--generate-completion-script"]

    /// The first argument that is neither an option (nor an option's value) nor a command's name:
    /// without this, the default command (status) would take it and print its own usage.
    static func unknownCommand(in arguments: [String]) -> String? {
        var index = arguments.startIndex
        while index < arguments.endIndex {
            let argument = arguments[index]
            if argument == "--" { return nil }
            if argument.hasPrefix("-") {
                // The options before a command that take a value in the next argument.
                if Self.optionsWithValue.contains(argument) { index += 1 }
                index += 1
                continue
            }
            return commandNames.contains(argument) ? nil : argument
        }
        return nil
    }
}

/// The options every command takes.
struct GlobalOptions: ParsableArguments {
    @Option(name: .long, help: ArgumentHelp("The control socket.", valueName: "path"))
    var socket: String = ControlConnection.defaultSocket

    @Flag(name: .long, help: "Print the daemon's reply as JSON.")
    var json = false

    @Option(
        name: .long,
        help: ArgumentHelp(
            "How long to wait for errorbusd: to connect, and for each answer (500ms, 5s, 1m). Default: 5s to read, 30s to change something, 60s for reauth.",
            valueName: "duration"
        ),
        transform: GlobalOptions.duration
    )
    var timeout: Duration?

    /// A duration as errorbusd's configuration writes them (`500ms`, `5s`, `1m`), above zero.
    static func duration(_ text: String) throws -> Duration {
        guard let duration = DurationFormat.parse(text), duration > .zero else {
            throw ValidationError("expected \(DurationFormat.expectation) above zero, got \"\(text)\"")
        }
        return duration
    }
}
