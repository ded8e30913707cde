public import ArgumentParser
import ErrorBusControl
import ErrorBusUnits
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import Varlink

#if canImport(Glibc)
import Glibc
#endif

// MARK: - Reading

struct Status: ControlCommand {
    static let configuration = CommandConfiguration(
        // Named, not inferred: the manual's synopsis shows the command optional only then.
        commandName: "status",
        abstract: "Show each service's state and job counts, and the open incidents.",
        discussion: "JSON: the reply of io.errorbus.Control.GetStatus."
    )
    @OptionGroup var options: GlobalOptions

    func run() async throws {
        try await call(Control.getStatus, VarlinkEmpty()) { Output().status($0) }
    }
}

struct Incidents: ControlCommand {
    static let configuration = CommandConfiguration(
        abstract: "List the open incidents (with --all, the resolved ones too).",
        discussion: "JSON: the reply of io.errorbus.Control.ListIncidents."
    )
    @OptionGroup var options: GlobalOptions
    @Flag(name: .shortAndLong, help: "Also the resolved incidents of the history, newest first.") var all = false
    @Option(help: "At most this many resolved incidents.") var limit: Int?

    func run() async throws {
        try await call(Control.listIncidents, .init(all: all ? true : nil, limit: limit)) { list in
            list.incidents.isEmpty ? (all ? "No incident." : "No open incident.") : Output().incidents(list.incidents)
        }
    }
}

struct IncidentCommand: ControlCommand {
    static let configuration = CommandConfiguration(
        commandName: "incident",
        abstract: "Show one incident, open or from the history.",
        discussion: "JSON: the reply of io.errorbus.Control.GetIncident."
    )
    @OptionGroup var options: GlobalOptions
    @Argument(help: "The incident's id.") var id: Int

    func run() async throws {
        try await call(Control.getIncident, .init(id: id)) { Output().incident($0) }
    }
}

struct Jobs: ControlCommand {
    static let configuration = CommandConfiguration(
        abstract: "List stored jobs, oldest first, a page at a time.",
        discussion: "JSON: the reply of io.errorbus.Control.ListJobs."
    )
    @OptionGroup var options: GlobalOptions
    @Option(help: "Only this service's jobs.") var service: String?
    @Option(help: "Only jobs in this state.") var state: Control.JobState?
    @Option(help: "Skip this many jobs.") var offset = 0
    @Option(help: "At most this many jobs (up to 1000).") var limit = 100

    func validate() throws {
        guard offset >= 0, (1...1000).contains(limit) else { throw ValidationError("--offset must be ≥ 0 and --limit between 1 and 1000") }
    }

    func run() async throws {
        let filter = Control.JobFilter(service: service, state: state, offset: offset, limit: limit)
        try await call(Control.listJobs, filter) { Output().jobs($0, shown: offset) }
    }
}

struct Dead: ControlCommand {
    static let configuration = CommandConfiguration(
        abstract: "List the dead letters: jobs the API rejected.",
        discussion: "JSON: the reply of io.errorbus.Control.ListDeadLetters."
    )
    @OptionGroup var options: GlobalOptions
    @Option(help: "Only this incident's.") var incident: Int?

    func run() async throws {
        try await call(Control.listDeadLetters, .init(incident: incident)) { list in
            list.jobs.isEmpty ? "No dead letter." : Output().jobs(list, shown: 0)
        }
    }
}

struct Watch: ControlCommand {
    static let configuration = CommandConfiguration(
        abstract: "Follow the bus's events live, after the open incidents.",
        discussion: """
            JSON: one io.errorbus.Control.Event per line. Ends with Ctrl-C, or when errorbusd stops. \
            --timeout bounds the wait for the open incidents errorbusd tells first; events then come \
            when they happen.
            """
    )
    @OptionGroup var options: GlobalOptions

    func run() async throws {
        let output = Output()
        try await ControlConnection.with(options, timeout: timeout) { client in
            var events = try await client.stream(Control.watch, VarlinkEmpty()).makeAsyncIterator()
            // The open incidents and `synchronized` come at once, each within the timeout; live
            // events come when they happen.
            var synchronized = false
            while true {
                let next =
                    synchronized
                    ? try await events.next()
                    : try await Deadline.answer(within: timeout, socket: options.socket) { try await events.next() }
                guard let event = next else { return }
                synchronized = synchronized || event.kind == "synchronized"
                if options.json {
                    try Output.json(event, compact: true)
                } else {
                    print(output.event(event))
                    fflush(nil)
                }
            }
        }
    }
}

// MARK: - Changing

/// `retry` and `discard` act on an incident, a job, or every dead letter.
struct TargetOptions: ParsableArguments {
    @Argument(help: "An incident's id.") var incident: Int?
    @Option(help: ArgumentHelp(jobIDHelp, valueName: "id")) var job: String?
    @Flag(help: "Every dead letter (retry: and every file set aside on its own, not given up yet, tried again now).") var deadLetters = false

    /// What a job's id may be, for `--job` and `cancel`.
    static let jobIDHelp = """
        A job's id, or its first characters (\(Control.minimumJobIDPrefix) at least) when no other job's id starts with \
        them: the 12 that jobs and dead show do.
        """

    /// A job's id given too short to name it.
    static func validate(jobID: String) throws {
        guard jobID.count >= Control.minimumJobIDPrefix else {
            throw ValidationError("a job's id, or at least its first \(Control.minimumJobIDPrefix) characters: \(jobID)")
        }
    }

    func validate() throws {
        guard [incident != nil, job != nil, deadLetters].filter({ $0 }).count == 1 else {
            throw ValidationError("name exactly one of: an incident id, --job ID, --dead-letters")
        }
        if let job { try Self.validate(jobID: job) }
    }

    var target: Control.Target {
        Control.Target(incident: incident, job: job, deadLetters: deadLetters ? true : nil)
    }
}

struct Retry: ControlCommand {
    static let configuration = CommandConfiguration(
        abstract: "Retry an incident now, a job, or every dead letter.",
        discussion: "Needs root or the control group. JSON: {\"count\": N}. \(waits(defaultTimeout))"
    )
    @OptionGroup var options: GlobalOptions
    static var defaultTimeout: Duration { ControlConnection.actionTimeout }
    @OptionGroup var target: TargetOptions

    func run() async throws {
        try await call(Control.retry, target.target) { "retried: \($0.count)" }
    }
}

struct Discard: ControlCommand {
    static let configuration = CommandConfiguration(
        abstract: "Give up an incident (its parked jobs), a job, or every dead letter.",
        discussion: "Needs root or the control group. A job being uploaded stops when its upload ends, unless that upload succeeds. JSON: {\"count\": N}, the jobs discarded, and \"running\": N, those of them that were being uploaded. \(waits(defaultTimeout))"
    )
    @OptionGroup var options: GlobalOptions
    static var defaultTimeout: Duration { ControlConnection.actionTimeout }
    @OptionGroup var target: TargetOptions

    func run() async throws {
        try await call(Control.discard, target.target) { discarded in
            guard let running = discarded.running, running > 0 else { return "discarded: \(discarded.count)" }
            return "discarded: \(discarded.count) (being uploaded: it stops when its upload ends, unless that upload succeeds)"
        }
    }
}

struct Cancel: ControlCommand {
    static let configuration = CommandConfiguration(
        abstract: "Stop one parked job; it is discarded.",
        discussion: "Needs root or the control group. JSON: {}. \(waits(defaultTimeout))"
    )
    @OptionGroup var options: GlobalOptions
    static var defaultTimeout: Duration { ControlConnection.actionTimeout }
    @Argument(help: ArgumentHelp(TargetOptions.jobIDHelp)) var job: String
    @Option(help: "The job's service.") var service = "sync"

    func validate() throws {
        try TargetOptions.validate(jobID: job)
    }

    func run() async throws {
        try await call(Control.cancel, .init(id: job, service: service)) { _ in "cancelled: \(job)" }
    }
}

struct Pause: ControlCommand {
    static let configuration = CommandConfiguration(
        abstract: "Pause a service: its new work parks until resume.",
        discussion: "Needs root or the control group. JSON: {\"id\": N}, the incident holding it. \(waits(defaultTimeout))"
    )
    @OptionGroup var options: GlobalOptions
    static var defaultTimeout: Duration { ControlConnection.actionTimeout }
    @Argument(help: "sync, loader or auth.") var service: String

    func run() async throws {
        try await call(Control.pause, .init(service: service)) { "\(service) paused (incident \($0.id))" }
    }
}

struct Resume: ControlCommand {
    static let configuration = CommandConfiguration(
        abstract: "Resume a paused service.",
        discussion: "Needs root or the control group. JSON: {\"count\": N}, the incidents resumed. \(waits(defaultTimeout))"
    )
    @OptionGroup var options: GlobalOptions
    static var defaultTimeout: Duration { ControlConnection.actionTimeout }
    @Argument(help: "sync, loader or auth.") var service: String

    func run() async throws {
        try await call(Control.resume, .init(service: service)) { $0.count == 0 ? "\(service) was not paused" : "\(service) resumed" }
    }
}

struct Reauth: ControlCommand {
    static let configuration = CommandConfiguration(
        abstract: "Drop the access token and sign in again now.",
        discussion: "Needs root or the control group. Exits 1 unless a new token is in place. JSON: {\"outcome\", \"message\"}. \(waits(defaultTimeout))"
    )
    @OptionGroup var options: GlobalOptions
    static var defaultTimeout: Duration { ControlConnection.signInTimeout }

    func run() async throws {
        let reply = try await ControlConnection.with(options, timeout: timeout) { try await $0.call(Control.reauthenticate) }
        if options.json {
            try Output.json(reply)
        } else {
            print("\(reply.outcome): \(reply.message)")
        }
        guard reply.outcome == "renewed" else { throw ExitStatus.failure }
    }
}

struct Reload: ControlCommand {
    static let configuration = CommandConfiguration(
        abstract: "Read the configuration again, as SIGHUP does.",
        discussion: "Needs root or the control group. JSON: {}. \(waits(defaultTimeout))"
    )
    @OptionGroup var options: GlobalOptions
    static var defaultTimeout: Duration { ControlConnection.actionTimeout }

    func run() async throws {
        try await call(Control.reload, VarlinkEmpty()) { _ in "configuration reloaded" }
    }
}

// MARK: - Every command

/// A command of errorbusctl: it talks to the control socket with the global options.
protocol ControlCommand: AsyncParsableCommand {
    var options: GlobalOptions { get }
    /// How long it waits for errorbusd unless `--timeout` says otherwise.
    static var defaultTimeout: Duration { get }
}

extension ControlCommand {
    static var defaultTimeout: Duration { ControlConnection.readTimeout }

    /// How long it waits for errorbusd: to connect, and for each answer.
    var timeout: Duration { options.timeout ?? Self.defaultTimeout }

    /// What a command that changes something says of its wait, in its help.
    static func waits(_ timeout: Duration) -> String {
        "Waits \(DurationText.exact(timeout)) for errorbusd's answer unless --timeout says otherwise."
    }

    /// Calls `method` and prints its reply: as JSON with `--json`, otherwise as `render` puts it.
    func call<Parameters, Reply>(
        _ method: VarlinkMethod<Parameters, Reply>,
        _ parameters: Parameters,
        terminator: String = "\n",
        render: (Reply) -> String
    ) async throws {
        let reply = try await ControlConnection.with(options, timeout: timeout) { try await $0.call(method, parameters) }
        if options.json { return try Output.json(reply) }
        print(render(reply), terminator: terminator)
    }
}


struct MetricsCommand: ControlCommand {
    static let configuration = CommandConfiguration(
        commandName: "metrics",
        abstract: "Print errorbusd's metrics in the Prometheus text format.",
        discussion: "For a scraper: errorbusctl metrics > /var/lib/node_exporter/errorbusd.prom. JSON: {\"text\"}."
    )
    @OptionGroup var options: GlobalOptions

    func run() async throws {
        try await call(Control.getMetrics, VarlinkEmpty(), terminator: "") { $0.text }
    }
}

/// `--state deadLettered`: the values are the wire names, listed in the help.
extension Control.JobState: ExpressibleByArgument {}
