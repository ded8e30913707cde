import ArgumentParser
import ErrorBusControl
import Foundation
import Varlink

#if canImport(Glibc)
import Glibc
#endif

// MARK: - Reading

struct Status: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Show each service's state and job counts, and the open incidents.",
        discussion: "JSON: the reply of io.errorbus.Control.GetStatus."
    )
    @OptionGroup var options: GlobalOptions

    func run() async throws {
        let status = try await ControlConnection.with(options) { try await $0.call(Control.getStatus) }
        if options.json { return try Output.json(status) }
        print(Output().status(status))
    }
}

struct Incidents: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "List the open incidents (with --all, the resolved ones too).",
        discussion: "JSON: the reply of io.errorbus.Control.ListIncidents."
    )
    @OptionGroup var options: GlobalOptions
    @Flag(name: .shortAndLong, help: "Also the resolved incidents of the history, newest first.") var all = false
    @Option(help: "At most this many resolved incidents.") var limit: Int?

    func run() async throws {
        let list = try await ControlConnection.with(options) {
            try await $0.call(Control.listIncidents, .init(all: all ? true : nil, limit: limit))
        }
        if options.json { return try Output.json(list) }
        print(list.incidents.isEmpty ? (all ? "No incident." : "No open incident.") : Output().incidents(list.incidents))
    }
}

struct IncidentCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "incident",
        abstract: "Show one incident, open or from the history.",
        discussion: "JSON: the reply of io.errorbus.Control.GetIncident."
    )
    @OptionGroup var options: GlobalOptions
    @Argument(help: "The incident's id.") var id: Int

    func run() async throws {
        let detail = try await ControlConnection.with(options) { try await $0.call(Control.getIncident, .init(id: id)) }
        if options.json { return try Output.json(detail) }
        print(Output().incident(detail))
    }
}

struct Jobs: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "List stored jobs, oldest first, a page at a time.",
        discussion: "JSON: the reply of io.errorbus.Control.ListJobs."
    )
    @OptionGroup var options: GlobalOptions
    @Option(help: "Only this service's jobs.") var service: String?
    @Option(help: "Only jobs in this state: \(Control.JobState.allCases.map(\.rawValue).joined(separator: ", ")).")
    var state: String?
    @Option(help: "Skip this many jobs.") var offset = 0
    @Option(help: "At most this many jobs (up to 1000).") var limit = 100

    func validate() throws {
        if let state, Control.JobState(rawValue: state) == nil {
            throw ValidationError("unknown state \(state); expected one of \(Control.JobState.allCases.map(\.rawValue).joined(separator: ", "))")
        }
        guard offset >= 0, (1...1000).contains(limit) else { throw ValidationError("--offset must be ≥ 0 and --limit between 1 and 1000") }
    }

    func run() async throws {
        let filter = Control.JobFilter(service: service, state: state.flatMap(Control.JobState.init), offset: offset, limit: limit)
        let list = try await ControlConnection.with(options) { try await $0.call(Control.listJobs, filter) }
        if options.json { return try Output.json(list) }
        print(Output().jobs(list, shown: offset))
    }
}

struct Dead: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "List the dead letters: jobs the API rejected.",
        discussion: "JSON: the reply of io.errorbus.Control.ListDeadLetters."
    )
    @OptionGroup var options: GlobalOptions
    @Option(help: "Only this incident's.") var incident: Int?

    func run() async throws {
        let list = try await ControlConnection.with(options) { try await $0.call(Control.listDeadLetters, .init(incident: incident)) }
        if options.json { return try Output.json(list) }
        print(list.jobs.isEmpty ? "No dead letter." : Output().jobs(list, shown: 0))
    }
}

struct Watch: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Follow the bus's events live, after the open incidents.",
        discussion: "JSON: one io.errorbus.Control.Event per line. Ends with Ctrl-C, or when errorbusd stops."
    )
    @OptionGroup var options: GlobalOptions

    func run() async throws {
        let output = Output()
        try await ControlConnection.with(options) { client in
            for try await event in try await client.stream(Control.watch, VarlinkEmpty()) {
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
    @Option(help: ArgumentHelp("A job's id.", valueName: "id")) var job: String?
    @Flag(help: "Every dead letter.") var deadLetters = false

    func validate() throws {
        guard [incident != nil, job != nil, deadLetters].filter({ $0 }).count == 1 else {
            throw ValidationError("name exactly one of: an incident id, --job ID, --dead-letters")
        }
    }

    var target: Control.Target {
        Control.Target(incident: incident, job: job, deadLetters: deadLetters ? true : nil)
    }
}

struct Retry: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Retry an incident now, a job, or every dead letter.",
        discussion: "Needs root or the control group. JSON: {\"count\": N}."
    )
    @OptionGroup var options: GlobalOptions
    @OptionGroup var target: TargetOptions

    func run() async throws {
        let count = try await ControlConnection.with(options) { try await $0.call(Control.retry, target.target) }
        if options.json { return try Output.json(count) }
        print("retried: \(count.count)")
    }
}

struct Discard: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Give up an incident (its parked jobs), a job, or every dead letter.",
        discussion: "Needs root or the control group. JSON: {\"count\": N}, the jobs discarded."
    )
    @OptionGroup var options: GlobalOptions
    @OptionGroup var target: TargetOptions

    func run() async throws {
        let count = try await ControlConnection.with(options) { try await $0.call(Control.discard, target.target) }
        if options.json { return try Output.json(count) }
        print("discarded: \(count.count)")
    }
}

struct Cancel: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Stop one parked job; it is discarded.",
        discussion: "Needs root or the control group. JSON: {}."
    )
    @OptionGroup var options: GlobalOptions
    @Argument(help: "The job's id.") var job: String
    @Option(help: "The job's service.") var service = "sync"

    func run() async throws {
        let reply = try await ControlConnection.with(options) { try await $0.call(Control.cancel, .init(id: job, service: service)) }
        if options.json { return try Output.json(reply) }
        print("cancelled: \(job)")
    }
}

struct Pause: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Pause a service: its new work parks until resume.",
        discussion: "Needs root or the control group. JSON: {\"id\": N}, the incident holding it."
    )
    @OptionGroup var options: GlobalOptions
    @Argument(help: "sync, loader or auth.") var service: String

    func run() async throws {
        let reference = try await ControlConnection.with(options) { try await $0.call(Control.pause, .init(service: service)) }
        if options.json { return try Output.json(reference) }
        print("\(service) paused (incident \(reference.id))")
    }
}

struct Resume: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Resume a paused service.",
        discussion: "Needs root or the control group. JSON: {\"count\": N}, the incidents resumed."
    )
    @OptionGroup var options: GlobalOptions
    @Argument(help: "sync, loader or auth.") var service: String

    func run() async throws {
        let count = try await ControlConnection.with(options) { try await $0.call(Control.resume, .init(service: service)) }
        if options.json { return try Output.json(count) }
        print(count.count == 0 ? "\(service) was not paused" : "\(service) resumed")
    }
}

struct Reauth: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Drop the access token and sign in again now.",
        discussion: "Needs root or the control group. Exits 1 unless a new token is in place. JSON: {\"outcome\", \"message\"}."
    )
    @OptionGroup var options: GlobalOptions

    func run() async throws {
        let reply = try await ControlConnection.with(options) { try await $0.call(Control.reauthenticate) }
        if options.json {
            try Output.json(reply)
        } else {
            print("\(reply.outcome): \(reply.message)")
        }
        guard reply.outcome == "renewed" else { throw ExitStatus.failure }
    }
}

struct Reload: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Read the configuration again, as SIGHUP does.",
        discussion: "Needs root or the control group. JSON: {}."
    )
    @OptionGroup var options: GlobalOptions

    func run() async throws {
        let reply = try await ControlConnection.with(options) { try await $0.call(Control.reload) }
        if options.json { return try Output.json(reply) }
        print("configuration reloaded")
    }
}

// MARK: - Every command

/// A command of errorbusctl: it talks to the control socket with the global options.
protocol ControlCommand: AsyncParsableCommand {
    var options: GlobalOptions { get }
}

extension Status: ControlCommand {}
extension Incidents: ControlCommand {}
extension IncidentCommand: ControlCommand {}
extension Jobs: ControlCommand {}
extension Dead: ControlCommand {}
extension Watch: ControlCommand {}
extension Retry: ControlCommand {}
extension Discard: ControlCommand {}
extension Cancel: ControlCommand {}
extension Pause: ControlCommand {}
extension Resume: ControlCommand {}
extension Reauth: ControlCommand {}
extension Reload: ControlCommand {}

struct MetricsCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "metrics",
        abstract: "Print errorbusd's metrics in the Prometheus text format.",
        discussion: "For a scraper: errorbusctl metrics > /var/lib/node_exporter/errorbusd.prom. JSON: {\"text\"}."
    )
    @OptionGroup var options: GlobalOptions

    func run() async throws {
        let reply = try await ControlConnection.with(options) { try await $0.call(Control.getMetrics) }
        if options.json { return try Output.json(reply) }
        print(reply.text, terminator: "")
    }
}

extension MetricsCommand: ControlCommand {}
