import ArgumentParser
import ErrorBusControl
@testable import errorbusctl
import Foundation
import Testing
import Varlink

/// errorbusctl's arguments and its human output, without a daemon (the runs of the built binary
/// are in ControlIntegrationTests).
@Suite struct ErrorbusctlParsingTests {
    @Test func retryNamesExactlyOneTarget() throws {
        let incident = try #require(try Errorbusctl.parseAsRoot(["retry", "7"]) as? Retry)
        #expect(incident.target.target == Control.Target(incident: 7))
        let job = try #require(try Errorbusctl.parseAsRoot(["retry", "--job", "afbf"]) as? Retry)
        #expect(job.target.target == Control.Target(job: "afbf"))
        let dead = try #require(try Errorbusctl.parseAsRoot(["discard", "--dead-letters", "--json"]) as? Discard)
        #expect(dead.target.target == Control.Target(deadLetters: true))
        #expect(dead.options.json)

        #expect(throws: (any Error).self) { try Errorbusctl.parseAsRoot(["retry"]) }
        #expect(throws: (any Error).self) { try Errorbusctl.parseAsRoot(["retry", "7", "--dead-letters"]) }
        #expect(throws: (any Error).self) { try Errorbusctl.parseAsRoot(["retry", "seven"]) }
        // A job by its first 4 characters at the least.
        #expect(throws: (any Error).self) { try Errorbusctl.parseAsRoot(["discard", "--job", "afb"]) }
        #expect(throws: (any Error).self) { try Errorbusctl.parseAsRoot(["cancel", "afb"]) }
    }

    @Test func everyCommandTakesSocketAndJSON() throws {
        for command in ["status", "incidents", "incident 1", "jobs", "dead", "watch", "retry 1", "discard 1", "cancel afbf9d0f3560", "pause sync", "resume sync", "reauth", "reload"] {
            let arguments = command.split(separator: " ").map(String.init) + ["--socket", "/tmp/x.sock", "--json"]
            let parsed = try #require(try Errorbusctl.parseAsRoot(arguments) as? any ControlCommand)
            #expect(parsed.options.socket == "/tmp/x.sock", "\(command)")
            #expect(parsed.options.json, "\(command)")
        }
        // Before the command's name as well as after it.
        for command in ["status", "incidents", "incident 1", "jobs", "retry 1", "reload"] {
            let arguments = ["--json", "--socket", "/tmp/y.sock"] + command.split(separator: " ").map(String.init)
            let parsed = try #require(try Errorbusctl.parseAsRoot(arguments) as? any ControlCommand)
            #expect(parsed.options.socket == "/tmp/y.sock", "\(command)")
            #expect(parsed.options.json, "\(command)")
        }
        let status = try #require(try Errorbusctl.parseAsRoot([]) as? Status)
        #expect(status.options.socket == "/run/errorbusd/io.errorbus.Control")
        #expect(!status.options.json)
    }

    /// --timeout in the configuration's durations, before or after the command's name; without
    /// it, each command's own default: short to read, longer to act, longest to sign in.
    @Test func timeoutIsADurationWithADefaultPerCommand() throws {
        let status = try #require(try Errorbusctl.parseAsRoot(["status", "--timeout", "250ms"]) as? Status)
        #expect(status.timeout == .milliseconds(250))
        let before = try #require(try Errorbusctl.parseAsRoot(["--timeout", "1m30s", "retry", "1"]) as? Retry)
        #expect(before.timeout == .seconds(90))
        #expect(Errorbusctl.unknownCommand(in: ["--timeout", "2s", "status"]) == nil)
        for bad in ["0", "soon", "-1s"] {
            #expect(throws: (any Error).self, "\(bad)") { try Errorbusctl.parseAsRoot(["status", "--timeout", bad]) }
        }

        let defaults: [(String, Duration)] = [
            ("status", .seconds(5)), ("health", .seconds(5)), ("watch", .seconds(5)), ("top", .seconds(5)), ("metrics", .seconds(5)),
            ("retry 1", .seconds(30)), ("discard 1", .seconds(30)), ("reload", .seconds(30)), ("reauth", .seconds(60)),
        ]
        for (command, expected) in defaults {
            let parsed = try #require(try Errorbusctl.parseAsRoot(command.split(separator: " ").map(String.init)) as? any ControlCommand)
            #expect(parsed.timeout == expected, "\(command)")
        }
    }

    @Test func anUnknownCommandIsNamedNotTakenForStatus() {
        #expect(Errorbusctl.unknownCommand(in: ["bogus"]) == "bogus")
        #expect(Errorbusctl.unknownCommand(in: ["--json", "--socket", "/x", "bogus"]) == "bogus")
        #expect(Errorbusctl.unknownCommand(in: ["--socket", "status"]) == nil)
        #expect(Errorbusctl.unknownCommand(in: ["--json", "status", "bogus"]) == nil)
        #expect(Errorbusctl.unknownCommand(in: []) == nil)
        #expect(Errorbusctl.unknownCommand(in: ["help", "retry"]) == nil)
        // swift-argument-parser's own option with a value, as scripts/install uses it.
        #expect(Errorbusctl.unknownCommand(in: ["--generate-completion-script", "bash"]) == nil)
    }

    @Test func jobsChecksItsFilter() throws {
        let jobs = try #require(try Errorbusctl.parseAsRoot(["jobs", "--service", "sync", "--state", "deadLettered", "--offset", "20", "--limit", "10"]) as? Jobs)
        #expect(jobs.state == .deadLettered)
        #expect(jobs.offset == 20)
        #expect(throws: (any Error).self) { try Errorbusctl.parseAsRoot(["jobs", "--state", "lost"]) }
        #expect(throws: (any Error).self) { try Errorbusctl.parseAsRoot(["jobs", "--limit", "0"]) }
    }

    @Test func timesAreSaidRelativeToNow() {
        let now = Date(timeIntervalSince1970: 1_800_000_000)
        #expect(Output.relative(now.addingTimeInterval(8), now: now) == "in 8s")
        #expect(Output.relative(now.addingTimeInterval(-180), now: now) == "3m ago")
        #expect(Output.relative(now.addingTimeInterval(-192), now: now) == "3m12s ago")
        #expect(Output.relative(now.addingTimeInterval(3725), now: now) == "in 1h2m")
        #expect(Output.relative(now.addingTimeInterval(-2 * 86_400 - 3 * 3600), now: now) == "2d3h ago")
        #expect(Output.relative(now.addingTimeInterval(0.6), now: now) == "in 1s")
        #expect(Output.relative(now.addingTimeInterval(-0.4), now: now) == "now")
        let output = Output(now: now)
        #expect(output.relative("2027-01-15T08:00:10Z") == Output.relative(Date(timeIntervalSince1970: 1_800_000_010), now: now))
        #expect(output.relative("2027-01-15T08:00:10.250Z") == "in 11s")
        #expect(output.relative(nil) == "-")
    }

    @Test func tablesAlignTheirColumns() {
        let output = Output(now: Date())
        let table = output.table(
            ["NAME", "COUNT", "NOTE"],
            [["sync", "12", "x"], ["loader", "3", "a longer note"]],
            rightAligned: [1]
        )
        #expect(table == """
            NAME    COUNT  NOTE
            sync       12  x
            loader      3  a longer note
            """)
    }

    /// A name with a line break or another control character stays on its row: the table shows
    /// it escaped, as `\n`; the JSON keeps it exact.
    @Test func controlCharactersInANameDoNotBreakTheTable() throws {
        let job = Control.Job(
            id: String(repeating: "ab", count: 32), service: "sync", file: "report\nfinal\t\u{1B}[31m.csv", size: 12,
            state: .queued, attempts: 0, lastError: nil, incident: nil, reason: nil,
            createdAt: "2027-01-15T08:00:00Z", updatedAt: "2027-01-15T08:00:00Z"
        )
        let text = Output(now: Date()).jobs(Control.JobList(jobs: [job], total: 1), shown: 0)
        let lines = text.split(separator: "\n", omittingEmptySubsequences: false)
        #expect(lines.count == 2, "a header and one row: \(text)")
        #expect(lines.last?.contains(#"report\nfinal\t\u{1B}[31m.csv"#) == true, "\(text)")
        #expect(!text.contains("\u{1B}"), "no escape sequence reaches the terminal: \(text)")
        let encoded = try JSONEncoder().encode(job)
        #expect(try JSONDecoder().decode(Control.Job.self, from: encoded).file == job.file)
    }

    /// The reason errorbusd gives for a configuration it cannot use may say how to restart it
    /// already (a missing credential's does); the line says it once.
    @Test func anUnusableConfigurationSaysHowToRestartOnce() {
        let withAdvice = Control.configurationUnusable.error(Control.ConfigurationProblem(
            key: "auth.client-secret",
            reason: "no client secret: … Put the API's client secret there (owned by root, mode 0600), then: systemctl restart errorbusd",
            text: "auth.client-secret: no client secret: … Put the API's client secret there (owned by root, mode 0600), then: systemctl restart errorbusd"
        ))
        let message = ControlConnection.message(for: withAdvice)
        #expect(message.components(separatedBy: "systemctl restart errorbusd").count == 2, "\(message)")
        let plain = Control.configurationUnusable.error(Control.ConfigurationProblem(
            file: "/etc/errorbusd/errorbusd.yaml", line: 3, key: "sync.concurrency", reason: "must be at least 1, got \"0\"",
            text: "/etc/errorbusd/errorbusd.yaml:3: sync.concurrency: must be at least 1, got \"0\""
        ))
        let plainMessage = ControlConnection.message(for: plain)
        #expect(plainMessage.components(separatedBy: "systemctl restart errorbusd").count == 2, "\(plainMessage)")
    }
}
