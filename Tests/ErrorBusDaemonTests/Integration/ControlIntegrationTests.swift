import ErrorBusControl
import ErrorBusStore
import Foundation
import Glibc
import Logging
@testable import Sandbox
import TestSupport
import Testing
import Varlink

/// `io.errorbus.Control` on the real errorbusd's real socket, through `errorbusctl` and through
/// a Varlink client in the test. Every wait is for something a process says; none is a sleep.
@Suite("Integration: the control socket and errorbusctl", .serialized, .timeLimit(.minutes(2)))
struct ControlIntegrationTests {
    typealias Daemon = DaemonIntegrationTests

    static let quiet = Logger(label: "control-tests", factory: { _ in SwiftLogNoOpLogHandler() })

    /// Runs errorbusctl against the daemon's socket, as root or (`asNobody`) with uid and gid
    /// 65534 and no supplementary group.
    static func ctl(_ daemon: DaemonProcess, _ arguments: String..., asNobody: Bool = false) async throws -> ChildProcess.Finished {
        let command = [Binaries.path("errorbusctl")] + arguments + ["--socket", daemon.controlSocket]
        if asNobody {
            return try await ChildProcess.run("/usr/bin/setpriv", ["--reuid=65534", "--regid=65534", "--clear-groups"] + command)
        }
        return try await ChildProcess.run(command[0], Array(command.dropFirst()))
    }

    /// errorbusctl's `--json` output, decoded; the run must have succeeded.
    static func json<Reply: Decodable>(
        _ type: Reply.Type,
        _ finished: ChildProcess.Finished,
        expectedStatus: Int32 = 0,
        sourceLocation: SourceLocation = #_sourceLocation
    ) throws -> Reply {
        #expect(finished.status == expectedStatus, "errorbusctl exited \(finished.status): \(finished.standardError)", sourceLocation: sourceLocation)
        return try JSONDecoder().decode(Reply.self, from: Data(finished.standardOutput.utf8))
    }

    /// Calls the daemon with a Varlink client.
    static func varlink<Result>(_ daemon: DaemonProcess, _ body: (VarlinkClient) async throws -> Result) async throws -> Result {
        try await VarlinkClient.withConnection(to: daemon.controlSocket, logger: quiet, body)
    }

    /// An API outage (by default: connections reset, a `transient` incident) holding `count`
    /// uploads in incident 1.
    static func outage(
        _ sandbox: SandboxProcess,
        _ daemon: DaemonProcess,
        count: Int,
        fault: String = #"{"route":"all","mode":"down"}"#
    ) async throws {
        try await sandbox.fault(fault)
        for number in 0..<count { try daemon.drop("item-\(number).bin", content: Daemon.content(number)) }
        try await daemon.waitForParked(count, under: 1)
    }

    @Test func statusIncidentsAndJobsTellTheOutageTruthfully() async throws {
        try await Daemon.withDaemon { sandbox, daemon in
            // Before: everything runs.
            let calm = try Self.json(Control.Status.self, try await Self.ctl(daemon, "status", "--json"))
            #expect(calm.running)
            #expect(calm.services.map(\.name) == ["sync", "loader", "auth"])
            #expect(calm.services.allSatisfy { $0.state == .running })
            #expect(calm.incidents.isEmpty)

            // 429 with a long Retry-After: nothing moves while the test looks.
            try await Self.outage(sandbox, daemon, count: 5, fault: #"{"route":"items","mode":"status","status":429,"retryAfter":60}"#)

            // The Varlink client and errorbusctl --json see the same thing.
            let status = try await Self.varlink(daemon) { try await $0.call(Control.getStatus) }
            let viaCtl = try Self.json(Control.Status.self, try await Self.ctl(daemon, "status", "--json"))
            for seen in [status, viaCtl] {
                let sync = try #require(seen.services.first { $0.name == "sync" })
                #expect(sync.state == .held)
                #expect(sync.parked == 5)
                #expect(sync.incidents == [1])
                #expect(sync.lastError?.incident == 1)
                #expect(sync.lastError?.open == true)
                let incident = try #require(seen.incidents.first)
                #expect(seen.incidents.count == 1)
                #expect(incident.id == 1)
                #expect(incident.category == .rateLimited)
                #expect(incident.parked == 5)
                #expect(incident.nextAction == "canary")
                #expect(incident.nextActionAt != nil)
                // The same story as STATUS=.
                #expect(seen.statusLine.hasPrefix("OK: sync: 5 parked, \(sandbox.baseURL) rate-limiting since "), "\(seen.statusLine)")
                #expect(seen.statusLine.contains(", next attempt in "))
            }

            // As text: an aligned table, no colour off a terminal, relative times.
            let text = try await Self.ctl(daemon, "status")
            #expect(text.status == 0)
            #expect(!text.standardOutput.contains("\u{1B}["))
            let lines = text.outputLines
            let header = try #require(lines.first { $0.hasPrefix("SERVICE") })
            let syncLine = try #require(lines.first { $0.hasPrefix("sync ") })
            #expect(header.range(of: "STATE")?.lowerBound.utf16Offset(in: header) == syncLine.range(of: "held")?.lowerBound.utf16Offset(in: syncLine))
            #expect(syncLine.contains("#1 "))
            // Retry-After 60, a little jitter, and the time the test has taken.
            #expect(text.standardOutput.contains(" canary in "))
            #expect(syncLine.contains("#1 API rate limit reached"))

            // Incidents, one incident, and a missing one.
            let incidents = try Self.json(Control.IncidentList.self, try await Self.ctl(daemon, "incidents", "--json"))
            #expect(incidents.incidents.map(\.id) == [1])
            let incidentsText = try await Self.ctl(daemon, "incidents")
            #expect(incidentsText.outputLines.count == 2)
            #expect(incidentsText.outputLines[1].contains("rateLimited"))
            let detail = try Self.json(Control.IncidentDetail.self, try await Self.ctl(daemon, "incident", "1", "--json"))
            #expect(detail.incident.id == 1)
            #expect(detail.parkedJobs.count == 5)
            let detailText = try await Self.ctl(daemon, "incident", "1")
            #expect(detailText.standardOutput.contains("Category:"))
            #expect(detailText.standardOutput.contains("rateLimited"))
            let missing = try await Self.ctl(daemon, "incident", "99")
            #expect(missing.status == 4)
            #expect(missing.standardError.contains("no incident 99"))
            await #expect(throws: VarlinkError.self) {
                try await Self.varlink(daemon) { try await $0.call(Control.getIncident, .init(id: 99)) }
            }
            let error = try await Self.varlink(daemon) { client -> VarlinkError? in
                do {
                    _ = try await client.call(Control.getIncident, .init(id: 99))
                    return nil
                } catch let error as VarlinkError {
                    return error
                }
            }
            #expect(error?.name == "io.errorbus.Control.NoSuchIncident")

            // Jobs, filtered and paged.
            let parked = try Self.json(Control.JobList.self, try await Self.ctl(daemon, "jobs", "--state", "parked", "--json"))
            #expect(parked.total == 5)
            #expect(parked.jobs.count == 5)
            #expect(parked.jobs.allSatisfy { $0.state == .parked && $0.incident == 1 && $0.service == "sync" })
            let page = try await Self.varlink(daemon) {
                try await $0.call(Control.listJobs, .init(service: "sync", state: .parked, offset: 3, limit: 2))
            }
            #expect(page.jobs.map(\.id) == Array(parked.jobs.map(\.id)[3...]))
            let pageText = try await Self.ctl(daemon, "jobs", "--state", "parked", "--limit", "2")
            #expect(pageText.standardOutput.contains("jobs 1–2 of 5"))
            let badState = try await Self.ctl(daemon, "jobs", "--state", "lost")
            #expect(badState.status == 64)

            // Recovery, hurried by an operator: the incident resolves, the history has it, the
            // service runs again.
            try await sandbox.clearFaults()
            let retried = try Self.json(Control.Count.self, try await Self.ctl(daemon, "retry", "1", "--json"))
            #expect(retried.count == 1)
            try await daemon.waitForLog("incident 1 recovered")
            try await DirectoryWatcher.wait(for: daemon.outbox) { $0.isEmpty }
            let after = try await Self.varlink(daemon) { try await $0.call(Control.getStatus) }
            #expect(after.incidents.isEmpty)
            #expect(after.services.first?.state == .running)
            #expect(after.services.first?.lastError?.open == false)
            let history = try Self.json(Control.IncidentList.self, try await Self.ctl(daemon, "incidents", "--all", "--json"))
            #expect(history.incidents.first?.id == 1)
            #expect(history.incidents.first?.resolution == "recovered")
            #expect(history.incidents.first?.closedAt != nil)
            let delivered = try await Self.varlink(daemon) { try await $0.call(Control.listJobs, .init(state: .delivered)) }
            #expect(delivered.total == 5)
        }
    }

    /// A long outage's queue waits in the store, each job a row parked under the incident, none
    /// in memory, and is told and acted on as such: each job alone.
    @Test func aQueueHeldBackWaitsInTheStoreAndIsToldAndActedOnAsParked() async throws {
        try await Daemon.withDaemon(environment: ["ERRORBUSD_SYNC_CONCURRENCY": "2"]) { sandbox, daemon in
            try await sandbox.fault(#"{"route":"items","mode":"status","status":429,"retryAfter":60}"#)
            for number in 0..<30 { try daemon.drop("item-\(number).bin", content: Daemon.content(number)) }
            // The uploads that met the incident, and the queue it held back (its canary waits
            // for the Retry-After).
            try await daemon.waitForParked(30, under: 1)
            let store = try Daemon.store(of: daemon)
            let parkedRows = try store.jobs(.parked)
            #expect(parkedRows.count == 30 && parkedRows.allSatisfy { $0.incident == 1 })
            #expect(try store.counts() == [JobState.parked.rawValue: 30])
            // To an operator, all thirty are parked behind incident 1, and the bus keeps none.
            let status = try await Self.varlink(daemon) { try await $0.call(Control.getStatus) }
            let sync = try #require(status.services.first { $0.name == "sync" })
            #expect(sync.queued == 0 && sync.inFlight == 0 && sync.parked == 30 && sync.state == .held && sync.incidents == [1])
            #expect(status.incidents.first?.parked == 30)
            #expect(status.statusLine.contains("sync: 30 parked"), "\(status.statusLine)")
            #expect(status.health.checks.first { $0.name == "parked" }?.value == 30)
            let parked = try Self.json(Control.JobList.self, try await Self.ctl(daemon, "jobs", "--state", "parked", "--limit", "1000", "--json"))
            #expect(parked.total == 30 && parked.jobs.count == 30)
            #expect(parked.jobs.allSatisfy { $0.state == .parked && $0.incident == 1 })
            #expect(Set(parked.jobs.map(\.id)).count == 30)
            let queued = try Self.json(Control.JobList.self, try await Self.ctl(daemon, "jobs", "--state", "queued", "--json"))
            #expect(queued.total == 0)

            // One waiting in the store is discarded, alone.
            let waiting = parkedRows
            let discarded = try #require(waiting.first)
            let discard = try await Self.ctl(daemon, "discard", "--job", String(discarded.id.prefix(12)))
            #expect(discard.status == 0, "\(discard.standardError)")
            #expect(try store.jobs(.discarded).map(\.id) == [discarded.id])

            // The API is back; an operator's retry of another one hurries its incident along.
            try await sandbox.clearFaults()
            let retry = try Self.json(Control.Count.self, try await Self.ctl(daemon, "retry", "--job", String(waiting[1].id.prefix(12)), "--json"))
            #expect(retry.count == 1)
            try await daemon.waitForLog("incident 1 recovered")
            try await DirectoryWatcher.wait(for: daemon.outbox) { $0 == [discarded.fileName] }
            #expect(try await sandbox.items().count == 29)
            #expect(try store.count(.delivered) == 29)
        }
    }

    @Test func watchSeesAnOutageOpenAndResolveLive() async throws {
        try await Daemon.withDaemon { sandbox, daemon in
            let watcher = try ChildProcess(Binaries.path("errorbusctl"), ["watch", "--json", "--socket", daemon.controlSocket])
            defer { watcher.terminate() }
            #expect(await watcher.waitForStandardOutput(containing: #""kind":"synchronized""#))

            try await Self.outage(sandbox, daemon, count: 3)
            #expect(await watcher.waitForStandardOutput(containing: #""kind":"incidentOpened""#))

            // A watch that starts now replays the open incident first.
            let replayed = try await Self.varlink(daemon) { client in
                var events: [Control.Event] = []
                for try await event in try await client.stream(Control.watch, VarlinkEmpty()) {
                    events.append(event)
                    if event.kind == "synchronized" { break }
                }
                return events
            }
            #expect(replayed.map(\.kind) == ["incidentOpen", "synchronized"])
            #expect(replayed.first?.replay == true)
            #expect(replayed.first?.incident?.id == 1)

            try await sandbox.clearFaults()
            #expect(await watcher.waitForStandardOutput(containing: #""kind":"incidentResolved""#))
            let events = watcher.standardOutput.text.split(separator: "\n").compactMap {
                try? JSONDecoder().decode(Control.Event.self, from: Data($0.utf8))
            }
            let opened = try #require(events.first { $0.kind == "incidentOpened" })
            #expect(opened.incident?.category == .transient)
            let resolved = try #require(events.first { $0.kind == "incidentResolved" })
            #expect(resolved.incident?.id == 1)
            #expect(resolved.incident?.resolution == "recovered")
        }
    }

    /// errorbusd stopped with SIGSTOP: its socket still accepts, nothing answers. errorbusctl
    /// says so within --timeout (5 s by default) and exits 75, health UNKNOWN (3); a watch that
    /// has its replay waits for events as long as they take.
    @Test func aStoppedErrorbusdIsToldWithinTheTimeoutNotWaitedForForEver() async throws {
        try await Daemon.withDaemon { sandbox, daemon in
            let watcher = try ChildProcess(Binaries.path("errorbusctl"), ["watch", "--json", "--timeout", "1s", "--socket", daemon.controlSocket])
            defer { watcher.terminate() }
            #expect(await watcher.waitForStandardOutput(containing: #""kind":"synchronized""#))

            try daemon.signal(SIGSTOP)
            let line = "errorbusd did not answer on \(daemon.controlSocket) within 1s: it runs but does not answer (stopped, hung or overloaded); see journalctl -u errorbusd"
            let asked = ContinuousClock.now
            let status = try await Self.ctl(daemon, "status", "--timeout", "1s")
            // Within the timeout, give or take starting a process on a busy machine: not the
            // Varlink client's own 30 s.
            #expect(asked.duration(to: .now) < .seconds(10))
            #expect(status.status == 75, "\(status.standardError)")
            #expect(status.standardError == "errorbusctl: \(line)\n")
            let json = try await Self.ctl(daemon, "--json", "incidents", "--timeout", "1s")
            #expect(json.status == 75)
            let object = try JSONDecoder().decode([String: String].self, from: Data(json.standardOutput.utf8))
            #expect(object == ["error": "timedOut", "reason": line])
            let health = try await Self.ctl(daemon, "health", "--timeout", "1s")
            #expect(health.status == 3)
            #expect(health.standardOutput == "ERRORBUSD UNKNOWN - \(line)\n")
            let watch = try await Self.ctl(daemon, "watch", "--timeout", "1s")
            #expect(watch.status == 75)
            #expect(watch.standardError == "errorbusctl: \(line)\n")
            let defaulted = try await Self.ctl(daemon, "jobs")
            #expect(defaulted.status == 75)
            #expect(defaulted.standardError.contains("within 5s: it runs but does not answer"), "\(defaulted.standardError)")

            // Meanwhile the watch that had its replay waited, well over a second, for events.
            #expect(!watcher.hasExited)
            try daemon.signal(SIGCONT)
            try await Self.outage(sandbox, daemon, count: 1)
            #expect(await watcher.waitForStandardOutput(containing: #""kind":"incidentOpened""#))
            #expect(try await Self.ctl(daemon, "status", "--timeout", "1s").status == 0)
        }
    }

    @Test func aNonMemberCanReadButMayNotRetry() async throws {
        try await Daemon.withDaemon { sandbox, daemon in
            // Let uid 65534 reach the socket: mkdtemp made the directory 0700.
            #expect(chmod(daemon.root, 0o755) == 0)
            try await Self.outage(sandbox, daemon, count: 2)

            let status = try Self.json(Control.Status.self, try await Self.ctl(daemon, "status", "--json", asNobody: true))
            #expect(status.incidents.map(\.id) == [1])
            let text = try await Self.ctl(daemon, "incidents", asNobody: true)
            #expect(text.status == 0)

            let refused = try await Self.ctl(daemon, "retry", "1", asNobody: true)
            #expect(refused.status == 77)
            #expect(refused.standardError.contains("permission denied: only root or members of group errorbus may call io.errorbus.Control.Retry"))
            let refusedJSON = try await Self.ctl(daemon, "pause", "sync", "--json", asNobody: true)
            #expect(refusedJSON.status == 77)
            try await daemon.waitForLog("control: Retry refused to uid 65534")

            // Root may.
            let retried = try Self.json(Control.Count.self, try await Self.ctl(daemon, "retry", "1", "--json"))
            #expect(retried.count == 1)
            let viaVarlink = try await Self.varlink(daemon) { try await $0.call(Control.retry, .init(incident: 1)) }
            #expect(viaVarlink.count == 1)
        }
    }

    @Test func membersOfTheControlGroupMayChangeThings() async throws {
        // nogroup (65534) is the control group. uid 65534 runs with gid 0 here, so that only the
        // user database (getgrouplist: nobody's primary group is nogroup) makes it a member.
        try await Daemon.withDaemon(environment: ["ERRORBUSD_CONTROL_GROUP": "nogroup"]) { sandbox, daemon in
            #expect(chmod(daemon.root, 0o755) == 0)
            try await Self.outage(sandbox, daemon, count: 1)
            let command = [Binaries.path("errorbusctl"), "retry", "1", "--json", "--socket", daemon.controlSocket]
            let member = try await ChildProcess.run("/usr/bin/setpriv", ["--reuid=65534", "--regid=0", "--clear-groups"] + command)
            #expect(try Self.json(Control.Count.self, member).count == 1)
            try await daemon.waitForLog("control: Retry by uid 65534")

            // uid 1 (daemon) is no member of nogroup.
            let other = try await ChildProcess.run("/usr/bin/setpriv", ["--reuid=1", "--regid=1", "--clear-groups"] + command)
            #expect(other.status == 77)
            // With --json, the refusal too is JSON, on standard output.
            let refusal = try JSONDecoder().decode(ErrorObject.self, from: Data(other.standardOutput.utf8))
            #expect(refusal.error == "permissionDenied")
            #expect(refusal.reason.contains("members of group nogroup"), "\(refusal.reason)")
        }
    }

    @Test func aSocketPassedBySocketActivationIsAdopted() async throws {
        let scratch = try ScratchDirectory("activation")
        let sandbox = try await SandboxProcess(in: scratch)
        let daemon = try DaemonProcess(in: scratch, sandbox: sandbox)
        defer { try? FileManager.default.removeItem(atPath: daemon.controlSocket) }
        let activated = scratch.file("activated.socket")
        // systemd-socket-activate binds the socket, waits for a connection, then execs errorbusd
        // with it as descriptor 3, named as errorbusd.socket names it.
        let activator = try ChildProcess(
            "/usr/bin/systemd-socket-activate",
            ["--listen=\(activated)", "--fdname=io.errorbus.Control", "-E", "CREDENTIALS_DIRECTORY=\(daemon.environment["CREDENTIALS_DIRECTORY"] ?? "")",
             Binaries.path("errorbusd"), "--config", daemon.configurationFile],
            environment: daemon.environment
        )
        do {
            let listening = await activator.waitForStandardError(containing: "Listening on \(activated)")
            try #require(listening, "systemd-socket-activate did not start: \(activator.standardError.text)")

            // The first call starts errorbusd, which answers it on the socket it was given.
            let status = try Self.json(
                Control.Status.self,
                try await ChildProcess.run(Binaries.path("errorbusctl"), ["status", "--json", "--socket", activated])
            )
            #expect(status.services.map(\.name) == ["sync", "loader", "auth"])
            #expect(await activator.waitForStandardError(containing: "errorbusd ready"))
            #expect(activator.standardError.text.contains("Varlink server listening"))
            #expect(activator.standardError.text.contains("fd:3"))
            // It did not bind control.socket-path as well.
            #expect(!FileManager.default.fileExists(atPath: daemon.controlSocket))
        } catch {
            activator.signal(SIGKILL)
            _ = await activator.waitForExit()
            try? await sandbox.stop()
            throw error
        }
        activator.terminate()
        let finished = await activator.waitForExit()
        #expect(finished.status == 0, "errorbusd exited with \(finished.status):\n\(finished.standardError)")
        try await sandbox.stop()
    }

    @Test func deadLettersAreListedRetriedAndDiscarded() async throws {
        try await Daemon.withDaemon { sandbox, daemon in
            try await sandbox.fault(#"{"route":"items","mode":"invalid","detail":"field 'customer' is required"}"#)
            for number in 0..<3 { try daemon.drop("bad-\(number).bin", content: Daemon.content(number)) }
            try await daemon.waitForLog("set aside as a dead letter: ", count: 3)

            let dead = try Self.json(Control.JobList.self, try await Self.ctl(daemon, "dead", "--json"))
            #expect(dead.total == 3)
            #expect(dead.jobs.allSatisfy { $0.state == .deadLettered && $0.reason?.contains("field 'customer' is required") == true })
            let deadText = try await Self.ctl(daemon, "dead")
            #expect(deadText.outputLines.count == 4)
            #expect(deadText.standardOutput.contains("deadLettered"))
            let status = try await Self.varlink(daemon) { try await $0.call(Control.getStatus) }
            #expect(status.services.first?.dead == 3)

            // One is given up; the others go again once the API takes them.
            let discarded = try Self.json(Control.Count.self, try await Self.ctl(daemon, "discard", "--job", dead.jobs[0].id, "--json"))
            #expect(discarded.count == 1)
            let noTarget = try await Self.ctl(daemon, "retry")
            #expect(noTarget.status == 64)
            let twoTargets = try await Self.varlink(daemon) { client -> String? in
                do {
                    _ = try await client.call(Control.retry, .init(incident: 1, deadLetters: true))
                    return nil
                } catch let error as VarlinkError {
                    return error.name
                }
            }
            #expect(twoTargets == "io.errorbus.Control.InvalidTarget")

            try await sandbox.clearFaults()
            let retried = try Self.json(Control.Count.self, try await Self.ctl(daemon, "retry", "--dead-letters", "--json"))
            #expect(retried.count == 2)
            try await DirectoryWatcher.wait(for: daemon.outbox) { $0.count == 1 }
            let left = try await Self.varlink(daemon) { try await $0.call(Control.listDeadLetters, .init()) }
            #expect(left.jobs.isEmpty)
            let counts = try await Self.varlink(daemon) { client in
                (
                    try await client.call(Control.listJobs, .init(state: .delivered)).total,
                    try await client.call(Control.listJobs, .init(state: .discarded)).total
                )
            }
            #expect(counts == (2, 1))
            let missing = try await Self.ctl(daemon, "retry", "--job", "no-such-job")
            #expect(missing.status == 4)
        }
    }

    @Test func metricsCountTheOutageAndTheDeliveries() async throws {
        try await Daemon.withDaemon { sandbox, daemon in
            try await sandbox.fault(#"{"route":"all","mode":"down"}"#)
            for number in 0..<4 { try daemon.drop("item-\(number).bin", content: Daemon.content(number)) }
            try await daemon.waitForParked(4, under: 1)
            // The incident reporter counts the opening, then logs it, from its own subscription:
            // the sync service's "parked" lines do not say it has yet.
            try await daemon.waitForLog("incident 1 opened")
            // The incident's canary (every 0.2 s and more here) takes one parked job out for the
            // few milliseconds it runs: read again, a bounded number of times, until none is out.
            var during = try await Self.ctl(daemon, "metrics")
            for _ in 0..<50 where during.status == 0 && !during.standardOutput.contains(#"errorbus_jobs{service="sync",state="parked"} 4.0"#) {
                during = try await Self.ctl(daemon, "metrics")
            }
            #expect(during.status == 0)
            // "down" resets connections: a transient incident.
            #expect(during.standardOutput.contains(#"errorbus_incidents_opened_total{service="sync",category="transient"} 1"#))
            #expect(during.standardOutput.contains(#"errorbus_jobs{service="sync",state="parked"} 4.0"#))
            #expect(during.standardOutput.contains("# TYPE errorbus_incidents_opened_total counter"))

            try await sandbox.clearFaults()
            try await daemon.waitForLog("incident 1 recovered")
            try await DirectoryWatcher.wait(for: daemon.outbox) { $0.isEmpty }
            let after = try Self.json(Control.MetricsExposition.self, try await Self.ctl(daemon, "metrics", "--json"))
            #expect(after.text.contains("errorbus_sync_delivered_total 4"))
            #expect(after.text.contains(#"errorbus_jobs{service="sync",state="parked"} 0.0"#))
            #expect(after.text.contains(#"errorbus_incidents_resolved_total{service="sync",category="transient"} 1"#))
            // The API's scope, with its adaptive concurrency: nothing runs or waits now.
            let scope = after.text.split(separator: "\n").filter { $0.hasPrefix("errorbus_concurrency_") }
            #expect(scope.count == 3, "\(scope)")
            #expect(scope.contains { $0.hasPrefix(#"errorbus_concurrency_in_flight{scope="\#(sandbox.baseURL)""#) && $0.hasSuffix(" 0.0") }, "\(scope)")
            #expect(scope.contains { $0.hasPrefix(#"errorbus_concurrency_limit{scope="\#(sandbox.baseURL)""#) })
        }
    }

    /// The bus, not the store, knows where a held job waits: a job an outage parked and its
    /// release parked again under an operator's pause is listed, retried and discarded there.
    @Test func aJobParkedAgainUnderAnotherIncidentIsListedRetriedAndDiscardedThere() async throws {
        try await Daemon.withDaemon { sandbox, daemon in
            try await sandbox.fault(#"{"route":"all","mode":"down"}"#)
            for number in 0..<3 { try daemon.drop("held-\(number).bin", content: Daemon.content(number)) }
            try await daemon.waitForParked(3, under: 1)
            let pause = try Self.json(Control.IncidentReference.self, try await Self.ctl(daemon, "pause", "sync", "--json"))
            #expect(pause.id == 2)

            // The outage ends: its canary is delivered, and its release finds sync paused and
            // parks the other two there.
            try await sandbox.clearFaults()
            try await daemon.waitForLog("incident 1 recovered")
            let parked = try Self.json(Control.JobList.self, try await Self.ctl(daemon, "jobs", "--state", "parked", "--json"))
            #expect(parked.total == 2)
            #expect(parked.jobs.map(\.incident) == [2, 2])
            let all = try await Self.varlink(daemon) { try await $0.call(Control.listJobs, .init()) }
            #expect(Set(all.jobs.filter { $0.state == .parked }.map(\.id)) == Set(parked.jobs.map(\.id)))
            #expect(all.jobs.filter { $0.state == .delivered }.count == 1)
            let inFlight = try await Self.varlink(daemon) { try await $0.call(Control.listJobs, .init(state: .inFlight)) }
            #expect(inFlight.total == 0 && inFlight.jobs.isEmpty)
            let status = try await Self.varlink(daemon) { try await $0.call(Control.getStatus) }
            #expect(status.services.first.map { ($0.parked, $0.inFlight) } ?? (0, 0) == (2, 0))

            // Discarding one stops it where it waits; sync records it discarded.
            let discarded = try Self.json(Control.Count.self, try await Self.ctl(daemon, "discard", "--job", parked.jobs[0].id, "--json"))
            #expect(discarded.count == 1)
            let gone = try await Self.varlink(daemon) { try await $0.call(Control.listJobs, .init(state: .discarded)) }
            #expect(gone.jobs.map(\.id) == [parked.jobs[0].id])

            // Retrying another retries the incident holding it now: the pause, which releases both.
            let retried = try Self.json(Control.Count.self, try await Self.ctl(daemon, "retry", "--job", parked.jobs[1].id, "--json"))
            #expect(retried.count == 1)
            try await DirectoryWatcher.wait(for: daemon.outbox) { $0.count == 1 }
            #expect(try await sandbox.items().count == 2)

            // A job in a state no method acts on is told as such.
            let again = try await Self.ctl(daemon, "retry", "--job", parked.jobs[1].id)
            #expect(again.status == 1)
            #expect(again.standardError.contains("job \(parked.jobs[1].id) of sync is delivered: it was delivered"), "\(again.standardError)")
            let unknown = try await Self.ctl(daemon, "discard", "--job", "0000")
            #expect(unknown.status == 4)
        }
    }

    /// The 12 characters of an id that `jobs` and `dead` show name the job, as a prefix of a
    /// git commit's id does; an incident lists its parked jobs by file name.
    @Test func aJobIsNamedByTheFirstCharactersOfItsIdAndParkedJobsByTheirFiles() async throws {
        // Two contents whose ids start with the same 4 hex digits, and a third.
        var firstByPrefix: [String: Int] = [:]
        var twins: (Int, Int)?
        for number in 0..<5000 where twins == nil {
            let prefix = String(Daemon.key(of: Daemon.content(number)).prefix(4))
            if let earlier = firstByPrefix[prefix] { twins = (earlier, number) } else { firstByPrefix[prefix] = number }
        }
        let (a, b) = try #require(twins)
        let numbers = [a, b, a == 0 || b == 0 ? 1 : 0]
        let ids = numbers.map { Daemon.key(of: Daemon.content($0)) }
        let shared = String(ids[0].prefix(4))

        try await Daemon.withDaemon { sandbox, daemon in
            // Parked under a pause, which sends no canary: the jobs stay where they are.
            let pause = try Self.json(Control.IncidentReference.self, try await Self.ctl(daemon, "pause", "sync", "--json"))
            for number in numbers { try daemon.drop("file-\(number).bin", content: Daemon.content(number)) }
            try await daemon.waitForParked(3, under: Int(pause.id))

            // The incident lists its parked jobs by short id and file name.
            let detail = try Self.json(Control.IncidentDetail.self, try await Self.ctl(daemon, "incident", "\(pause.id)", "--json"))
            #expect(Set(detail.parked.map(\.id)) == Set(ids))
            #expect(detail.parkedJobs == detail.parked.map(\.id))
            #expect(Set(detail.parked.compactMap(\.name)) == Set(numbers.map { "file-\($0).bin" }))
            let detailText = try await Self.ctl(daemon, "incident", "\(pause.id)")
            let listed = detailText.outputLines.drop { !$0.hasPrefix("Parked jobs:") }
            for (number, id) in zip(numbers, ids) {
                #expect(listed.contains { $0.contains(String(id.prefix(12))) && $0.hasSuffix("file-\(number).bin") }, "\(detailText.standardOutput)")
            }

            // Too short a prefix is refused before it is sent; an ambiguous one says how many
            // jobs it names and shows them; one no job's id starts with is not found.
            let short = try await Self.ctl(daemon, "retry", "--job", String(ids[0].prefix(3)))
            #expect(short.status == 64)
            #expect(short.standardError.contains("at least its first 4 characters"), "\(short.standardError)")
            let ambiguous = try await Self.ctl(daemon, "retry", "--job", shared)
            #expect(ambiguous.status == 64)
            #expect(ambiguous.standardError.contains("job id \(shared) is ambiguous: 2 jobs of sync start with it"), "\(ambiguous.standardError)")
            #expect(ambiguous.standardError.contains("\(ids[0])  file-\(a).bin"), "\(ambiguous.standardError)")
            #expect(ambiguous.standardError.contains("\(ids[1])  file-\(b).bin"), "\(ambiguous.standardError)")
            let problem = try await Self.varlink(daemon) { client -> Control.AmbiguousJobID? in
                do {
                    _ = try await client.call(Control.cancel, .init(id: shared))
                    return nil
                } catch let error as VarlinkError {
                    return try Control.ambiguousJob.parameters(of: error)
                }
            }
            #expect(problem?.matches == 2)
            #expect(problem?.candidates.map(\.id) == ids[0...1].sorted())
            let unknownPrefix = try #require((0..<0x10000).lazy.map { String(format: "%04x", $0) }.first { p in !ids.contains { $0.hasPrefix(p) } })
            let unknown = try await Self.ctl(daemon, "discard", "--job", unknownPrefix)
            #expect(unknown.status == 4)
            #expect(unknown.standardError.contains("no job \(unknownPrefix) of sync"), "\(unknown.standardError)")

            // The 12 characters jobs shows discard one, cancel another, and retry the third's
            // incident.
            let discarded = try Self.json(Control.Count.self, try await Self.ctl(daemon, "discard", "--job", String(ids[0].prefix(12)), "--json"))
            #expect(discarded.count == 1)
            let cancelled = try await Self.ctl(daemon, "cancel", String(ids[1].prefix(12)))
            #expect(cancelled.status == 0, "\(cancelled.standardError)")
            let gone = try await Self.varlink(daemon) { try await $0.call(Control.listJobs, .init(state: .discarded)) }
            #expect(Set(gone.jobs.map(\.id)) == Set(ids[0...1]))
            // Each says in words what became of it.
            #expect(gone.jobs.map(\.reason) == ["discarded by an operator", "discarded by an operator"])
            // Now the shared prefix names one job: the discarded one's tell what it is.
            let again = try await Self.ctl(daemon, "retry", "--job", String(ids[0].prefix(8)))
            #expect(again.status == 1)
            #expect(again.standardError.contains("job \(ids[0]) of sync is discarded"), "\(again.standardError)")

            // Retrying the third retries the pause holding it, which releases it.
            let retried = try Self.json(Control.Count.self, try await Self.ctl(daemon, "retry", "--job", String(ids[2].prefix(12)), "--json"))
            #expect(retried.count == 1)
            // Delivered, its file removed; the discarded ones' files stay.
            try await DirectoryWatcher.wait(for: daemon.outbox) { $0.count == 2 }
            #expect(try await sandbox.items().count == 1)
            let delivered = try await Self.varlink(daemon) { try await $0.call(Control.listJobs, .init(state: .delivered)) }
            #expect(delivered.jobs.map(\.id) == [ids[2]])
        }
    }

    @Test func pauseCancelResumeReloadAndReauthenticate() async throws {
        try await Daemon.withDaemon { sandbox, daemon in
            let paused = try Self.json(Control.IncidentReference.self, try await Self.ctl(daemon, "pause", "sync", "--json"))
            let status = try await Self.varlink(daemon) { try await $0.call(Control.getStatus) }
            #expect(status.services.first?.state == .paused)
            #expect(status.incidents.map(\.id) == [paused.id])

            // Work parks under the pause; one parked job is cancelled.
            for number in 0..<2 { try daemon.drop("held-\(number).bin", content: Daemon.content(number)) }
            try await daemon.waitForParked(2, under: Int(paused.id))
            let parked = try await Self.varlink(daemon) { try await $0.call(Control.listJobs, .init(state: .parked)) }
            #expect(parked.total == 2)
            let cancelled = try await Self.ctl(daemon, "cancel", parked.jobs[0].id)
            #expect(cancelled.status == 0, "\(cancelled.standardError)")
            #expect(cancelled.standardOutput.contains("cancelled: \(parked.jobs[0].id)"))
            // The bus no longer holds it: the answer says what the job is now.
            let cancelledAgain = try await Self.ctl(daemon, "cancel", parked.jobs[0].id)
            #expect(cancelledAgain.status == 1)
            #expect(cancelledAgain.standardError.contains("job \(parked.jobs[0].id) of sync is "), "\(cancelledAgain.standardError)")

            let resumed = try Self.json(Control.Count.self, try await Self.ctl(daemon, "resume", "sync", "--json"))
            #expect(resumed.count == 1)
            try await DirectoryWatcher.wait(for: daemon.outbox) { $0.count == 1 }
            #expect(try await sandbox.items().count == 1)

            let unknown = try await Self.ctl(daemon, "pause", "nothing")
            #expect(unknown.status == 4)
            #expect(unknown.standardError.contains("no service nothing"))

            let reload = try await Self.ctl(daemon, "reload")
            #expect(reload.status == 0, "\(reload.standardError)")
            try await daemon.waitForLog("configuration reloaded")

            // A configuration that does not load: the reply says where and why.
            let good = try String(contentsOfFile: daemon.configurationFile, encoding: .utf8)
            try (good + "\nbogus-key: 1\n").write(toFile: daemon.configurationFile, atomically: true, encoding: .utf8)
            let failed = try await Self.ctl(daemon, "reload")
            #expect(failed.status == 1)
            #expect(failed.standardError.contains("reload failed, the running configuration is kept: \(daemon.configurationFile):"), "\(failed.standardError)")
            #expect(failed.standardError.contains("bogus-key"), "\(failed.standardError)")
            let problem = try await Self.varlink(daemon) { client -> Control.ConfigurationProblem? in
                do {
                    _ = try await client.call(Control.reload)
                    return nil
                } catch let error as VarlinkError {
                    return try Control.reloadFailed.parameters(of: error)
                }
            }
            #expect(problem?.file == daemon.configurationFile)
            #expect(problem?.key == "bogus-key")
            #expect(problem?.line != nil)
            try good.write(toFile: daemon.configurationFile, atomically: true, encoding: .utf8)
            let tokensBefore = try await sandbox.stats().tokens.requests
            let reauth = try Self.json(Control.Reauthentication.self, try await Self.ctl(daemon, "reauth", "--json"))
            #expect(reauth.outcome == "renewed")
            #expect(try await sandbox.stats().tokens.requests == tokensBefore + 1)
        }
    }

    @Test func aRawClientIsAnsweredAndMisbehavingOnesDoNotDisturbIt() async throws {
        try await Daemon.withDaemon { _, daemon in
            let client = try RawVarlink(daemon.controlSocket)
            let status = try #require(try await client.call(#"{"method":"io.errorbus.Control.GetStatus"}"#))
            let parameters = try #require(status["parameters"] as? [String: Any])
            let services = try #require(parameters["services"] as? [[String: Any]])
            #expect(services.compactMap { $0["name"] as? String } == ["sync", "loader", "auth"])
            #expect(services.first?["state"] as? String == "running")

            // Typed errors for a wrong type, an unknown method, a missing incident.
            let wrongType = try #require(try await client.call(#"{"method":"io.errorbus.Control.Retry","parameters":{"incident":"one"}}"#))
            #expect(wrongType["error"] as? String == "org.varlink.service.InvalidParameter")
            #expect((wrongType["parameters"] as? [String: Any])?["parameter"] as? String == "incident")
            let unknown = try #require(try await client.call(#"{"method":"io.errorbus.Control.Explode"}"#))
            #expect(unknown["error"] as? String == "org.varlink.service.MethodNotFound")
            let missing = try #require(try await client.call(#"{"method":"io.errorbus.Control.GetIncident","parameters":{"id":7}}"#))
            #expect(missing["error"] as? String == "io.errorbus.Control.NoSuchIncident")
            #expect((missing["parameters"] as? [String: Any])?["id"] as? Int == 7)

            // A message over 1 MiB is refused and its connection closed; a message that stalls
            // halfway is cut off after the message timeout. The first client is still answered.
            let flooder = try RawVarlink(daemon.controlSocket)
            try? await flooder.send(bytes: Array(#"{"method":"io.errorbus.Control.GetStatus","parameters":{"x":""#.utf8) + [UInt8](repeating: 0x61, count: 2 << 20))
            let tooLarge = try await flooder.receive()
            #expect(tooLarge?["error"] as? String == "io.errorbus.varlink.MessageTooLarge")
            #expect(try await flooder.receive() == nil)
            let staller = try RawVarlink(daemon.controlSocket)
            try await staller.send(bytes: Array(#"{"method":"io.errorbus.Con"#.utf8))
            #expect(try await client.call(#"{"method":"io.errorbus.Control.ListIncidents"}"#)?["parameters"] != nil)
            while let message = try await staller.receive() {
                #expect(message["error"] != nil)
            }
            #expect(try await client.call(#"{"method":"io.errorbus.Control.GetStatus"}"#)?["parameters"] != nil)
        }
    }

    @Test func connectionsBeyondControlMaxConnectionsAreToldSo() async throws {
        try await Daemon.withDaemon(environment: ["ERRORBUSD_CONTROL_MAX_CONNECTIONS": "2"]) { _, daemon in
            let first = try RawVarlink(daemon.controlSocket)
            let second = try RawVarlink(daemon.controlSocket)
            #expect(try await first.call(#"{"method":"io.errorbus.Control.GetStatus"}"#)?["parameters"] != nil)
            #expect(try await second.call(#"{"method":"io.errorbus.Control.GetStatus"}"#)?["parameters"] != nil)
            let third = try RawVarlink(daemon.controlSocket)
            let refused = try await third.receive()
            #expect(refused?["error"] as? String == "io.errorbus.varlink.TooManyConnections")
            let viaCtl = try await Self.ctl(daemon, "status")
            #expect(viaCtl.status == 1)
            #expect(viaCtl.standardError.contains("as many control connections as it takes"))
            #expect(try await first.call(#"{"method":"io.errorbus.Control.GetStatus"}"#)?["parameters"] != nil)
        }
    }

    /// Opens `count` connections to the socket as the user it runs as, makes one call on each,
    /// prints how many were answered and how many refused, and holds them until killed.
    static let connectionHog = #"""
        import json, socket, sys, time
        path, count = sys.argv[1], int(sys.argv[2])
        held, answered, refused = [], 0, 0
        for _ in range(count):
            s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            s.connect(path)
            try:
                s.sendall(b'{"method":"io.errorbus.Control.GetStatus"}\0')
            except (BrokenPipeError, ConnectionResetError):
                pass  # refused and closed before the call went out: the refusal is in the buffer
            reply = b""
            try:
                while not reply.endswith(b"\0"):
                    chunk = s.recv(65536)
                    if not chunk: break
                    reply += chunk
            except ConnectionResetError:
                pass
            # Answered: GetStatus's reply. Refused: TooManyConnections, or closed before it.
            if b'"parameters"' in reply and b'"error"' not in reply:
                answered += 1
            else:
                refused += 1
            held.append(s)
        print(f"answered={answered} refused={refused}", flush=True)
        time.sleep(600)
        """#

    @Test func aLocalUserCannotLockRootOutOfTheControlSocket() async throws {
        try await Daemon.withDaemon(environment: ["ERRORBUSD_CONTROL_MAX_CONNECTIONS": "40", "ERRORBUSD_CONTROL_MAX_CONNECTIONS_PER_USER": "8"]) { _, daemon in
            // Let other uids reach the socket: mkdtemp made the directory 0700.
            #expect(chmod(daemon.root, 0o755) == 0)
            // One unprivileged user: at most 8 connections.
            let nobody = try ChildProcess(
                "/usr/bin/setpriv",
                ["--reuid=65534", "--regid=65534", "--clear-groups", "/usr/bin/env", "python3", "-c", Self.connectionHog, daemon.controlSocket, "20"]
            )
            #expect(await nobody.waitForStandardOutput(containing: "answered=8 refused=12"), "\(nobody.standardOutput.text) \(nobody.standardError.text)")
            // Many users (here: many uids through setpriv) together leave the reserve, an eighth of
            // 40, to root and the control group.
            var others: [ChildProcess] = []
            for uid in 60_000..<60_004 {
                let hog = try ChildProcess(
                    "/usr/bin/setpriv",
                    ["--reuid=\(uid)", "--regid=\(uid)", "--clear-groups", "/usr/bin/env", "python3", "-c", Self.connectionHog, daemon.controlSocket, "8"]
                )
                others.append(hog)
                #expect(await hog.waitForStandardOutput(containing: "answered="))
            }
            let answered = others.compactMap { hog -> Int? in
                hog.standardOutput.text.split(separator: " ").first.flatMap { Int($0.dropFirst("answered=".count)) }
            }
            // 8 of nobody, then 40 - 5 - 8 = 27 for the four others.
            #expect(answered.reduce(0, +) == 27, "\(answered)")
            let status = try await Self.ctl(daemon, "status")
            #expect(status.status == 0, "root was locked out: \(status.standardError)")
            for hog in others + [nobody] {
                hog.signal(SIGKILL)
                _ = await hog.waitForExit()
            }
        }
    }

    @Test func anyVarlinkClientCanIntrospectTheInterface() async throws {
        try await Daemon.withDaemon { _, daemon in
            let (info, description) = try await Self.varlink(daemon) { client in
                (
                    try await client.call(VarlinkService.getInfo),
                    try await client.call(VarlinkService.getInterfaceDescription, .init(interface: Control.interfaceName))
                )
            }
            #expect(info.product == "errorbusd")
            #expect(info.interfaces.contains(Control.interfaceName))
            #expect(description.description == Control.interface.description)
            #expect(description.description.contains("method GetStatus() -> ("))
            #expect(description.description.contains("error PermissionDenied ("))
        }
    }

    /// The reference implementation of Varlink (PyPI: varlink; `scripts/test` installs it) builds
    /// its proxy from the interface definition errorbusd serves, then calls through it.
    static let pythonClient = """
        import json, sys, varlink
        with varlink.Client(address="unix:" + sys.argv[1]) as client:
            with client.open("io.errorbus.Control") as control:
                status = control.GetStatus()
                jobs = control.ListJobs(state="queued", limit=5)
                try:
                    control.GetIncident(id=99)
                    error = None
                except varlink.VarlinkError as e:
                    error = e.error()
                print(json.dumps({"services": [s["name"] for s in status["services"]], "total": jobs["total"], "error": error}))
        """

    @Test func thePythonReferenceClientReadsTheInterfaceAndCalls() async throws {
        try await Daemon.withDaemon { _, daemon in
            let finished = try await ChildProcess.run("/usr/bin/env", ["python3", "-c", Self.pythonClient, daemon.controlSocket])
            #expect(finished.status == 0, "\(finished.standardError)")
            #expect(finished.standardOutput == #"{"services": ["sync", "loader", "auth"], "total": 0, "error": "io.errorbus.Control.NoSuchIncident"}"# + "\n")
        }
    }

    /// Runs errorbusctl with `arguments` on a socket that starts errorbusd, by socket
    /// activation, with a configuration it cannot use: the call that starts it is answered with
    /// the reason. `check` sees errorbusctl's run, the configuration file, and errorbusd's.
    static func withUnusableConfiguration(
        _ arguments: [String],
        _ check: (_ errorbusctl: ChildProcess.Finished, _ configuration: String, _ errorbusd: ChildProcess.Finished) throws -> Void
    ) async throws {
        let scratch = try ScratchDirectory("activation-bad")
        let sandbox = try await SandboxProcess(in: scratch)
        let daemon = try DaemonProcess(in: scratch, sandbox: sandbox)
        let broken = scratch.file("broken.yaml")
        let good = try String(contentsOfFile: daemon.configurationFile, encoding: .utf8)
        try (good + "\nsync-typo: 1\n").write(toFile: broken, atomically: true, encoding: .utf8)
        let activated = scratch.file("activated.socket")
        let activator = try ChildProcess(
            "/usr/bin/systemd-socket-activate",
            ["--listen=\(activated)", "--fdname=io.errorbus.Control", "-E", "CREDENTIALS_DIRECTORY=\(daemon.environment["CREDENTIALS_DIRECTORY"] ?? "")",
             Binaries.path("errorbusd"), "--config", broken],
            environment: daemon.environment
        )
        defer { try? FileManager.default.removeItem(atPath: activated) }
        let listening = await activator.waitForStandardError(containing: "Listening on \(activated)")
        try #require(listening, "systemd-socket-activate did not start: \(activator.standardError.text)")
        let called = try await ChildProcess.run(Binaries.path("errorbusctl"), ["--socket", activated] + arguments)
        let finished = await activator.waitForExit()
        do {
            try check(called, broken, finished)
        } catch {
            // The sandbox's client must be shut down before it goes, whatever the check found.
            try? await sandbox.stop()
            throw error
        }
        try await sandbox.stop()
    }

    @Test func aBadConfigurationIsToldToTheCallThatStartedErrorbusd() async throws {
        try await Self.withUnusableConfiguration(["status"]) { status, broken, finished in
            // The call that starts errorbusd is answered with the reason, not reset.
            #expect(status.status == 78, "\(status.standardError)")
            #expect(status.standardError.contains("configuration is unusable: \(broken):"), "\(status.standardError)")
            #expect(status.standardError.contains("sync-typo"), "\(status.standardError)")
            #expect(status.standardError.split(separator: "\n").count == 1, "one line: \(status.standardError)")
            #expect(status.standardError.components(separatedBy: "systemctl restart errorbusd").count == 2, "said once: \(status.standardError)")
            #expect(finished.status == 78)
            #expect(finished.standardError.contains("told 1 control client(s)"), "\(finished.standardError)")
        }
    }

    /// A host whose errorbusd cannot start delivers nothing: a monitor hears CRITICAL, with the
    /// reason, not UNKNOWN.
    @Test func healthIsCriticalWhileTheConfigurationIsUnusable() async throws {
        try await Self.withUnusableConfiguration(["health"]) { health, broken, _ in
            #expect(health.status == 2, "\(health.standardOutput) \(health.standardError)")
            #expect(health.standardOutput.hasPrefix("ERRORBUSD CRITICAL - "), "\(health.standardOutput)")
            #expect(health.standardOutput.contains("configuration is unusable: \(broken):"), "\(health.standardOutput)")
            #expect(health.standardOutput.split(separator: "\n").count == 1, "one line: \(health.standardOutput)")
        }
    }

    /// What errorbusctl could not do, with --json: one JSON object on standard output, which a
    /// script can read, and the exit status as without.
    struct ErrorObject: Decodable {
        var error: String
        var reason: String
    }

    @Test func withJSONAnErrorIsAJSONObject() async throws {
        try await Self.withUnusableConfiguration(["status", "--json"]) { status, broken, _ in
            #expect(status.status == 78, "\(status.standardOutput) \(status.standardError)")
            let object = try JSONDecoder().decode(ErrorObject.self, from: Data(status.standardOutput.utf8))
            #expect(object.error == "configurationUnusable")
            #expect(object.reason.contains("configuration is unusable: \(broken):"), "\(object.reason)")
            #expect(status.standardError.isEmpty, "\(status.standardError)")
        }
        let scratch = try ScratchDirectory("ctl-json")
        let finished = try await ChildProcess.run(Binaries.path("errorbusctl"), ["status", "--json", "--socket", scratch.file("none.socket")])
        #expect(finished.status == 69)
        let object = try JSONDecoder().decode(ErrorObject.self, from: Data(finished.standardOutput.utf8))
        #expect(object.error == "notRunning")
        #expect(object.reason.hasPrefix("errorbusd is not running"), "\(object.reason)")
    }

    @Test func errorbusctlNamesItsCommandsAndVersion() async throws {
        let unknown = try await ChildProcess.run(Binaries.path("errorbusctl"), ["bogus"])
        #expect(unknown.status == 64)
        #expect(unknown.standardError.contains("unknown command 'bogus'"), "\(unknown.standardError)")
        #expect(unknown.standardError.contains("status, incidents, incident, jobs"), "\(unknown.standardError)")
        let version = try await ChildProcess.run(Binaries.path("errorbusctl"), ["--version"])
        #expect(version.status == 0)
        #expect(version.standardOutput == ErrorBusVersion.current + "\n")
    }

    @Test func withoutADaemonErrorbusctlSaysSoAndExits69() async throws {
        let scratch = try ScratchDirectory("ctl")
        let finished = try await ChildProcess.run(Binaries.path("errorbusctl"), ["status", "--socket", scratch.file("none.socket")])
        #expect(finished.status == 69)
        #expect(finished.standardError.contains("errorbusd is not running"))
    }
}
