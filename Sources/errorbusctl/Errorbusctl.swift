import ArgumentParser

/// `errorbusctl`: see and steer errorbusd through its control socket (`io.errorbus.Control`).
@main
struct Errorbusctl: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "errorbusctl",
        abstract: "See and steer errorbusd through its control socket.",
        discussion: """
            Reading (status, incidents, incident, jobs, dead, watch) is open to anyone who can open \
            the socket; the commands that change something (retry, discard, cancel, pause, resume, \
            reauth, reload) need root or membership of errorbusd's control group.

            --json prints the daemon's reply as io.errorbus.Control defines it \
            (`varlinkctl introspect /run/errorbusd/io.errorbus.Control`); watch prints one JSON \
            object per line.

            Exit status:
              0   success
              1   failure: any other error the daemon answered, e.g. a reload that failed
              4   not found: no such incident, job or service
              64  usage: invalid arguments
              69  errorbusd is not running (nothing listens on the socket)
              77  permission denied (socket or method)
            """,
        subcommands: [
            Status.self, Incidents.self, IncidentCommand.self, Jobs.self, Dead.self,
            Retry.self, Discard.self, Cancel.self, Pause.self, Resume.self, Reauth.self, Reload.self,
            Watch.self, MetricsCommand.self,
        ],
        defaultSubcommand: Status.self
    )
}

/// The options every command takes.
struct GlobalOptions: ParsableArguments {
    @Option(name: .long, help: ArgumentHelp("The control socket.", valueName: "path"))
    var socket: String = ControlConnection.defaultSocket

    @Flag(name: .long, help: "Print the daemon's reply as JSON.")
    var json = false
}
