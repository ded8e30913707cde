import ErrorBusControl
import Foundation
import TestSupport
import Testing
import Varlink

/// `errorbusctl health`: one line and the monitoring-plugin exit status, the same verdict as
/// `STATUS=` and `GetStatus`.
@Suite("Integration: errorbusctl health", .serialized, .timeLimit(.minutes(2)))
struct HealthIntegrationTests {
    typealias Daemon = DaemonIntegrationTests
    typealias Ctl = ControlIntegrationTests

    static func status(_ daemon: DaemonProcess) async throws -> Control.Status {
        try await Ctl.varlink(daemon) { try await $0.call(Control.getStatus) }
    }

    /// `errorbusctl health` against the daemon: its exit status and line.
    static func health(_ daemon: DaemonProcess) async throws -> ChildProcess.Finished {
        try await Ctl.ctl(daemon, "health")
    }

    @Test func healthAnswersAsAMonitoringPluginAndAgreesWithTheStatusLine() async throws {
        let environment = [
            "ERRORBUSD_HEALTH_PARKED_WARNING": "2", "ERRORBUSD_HEALTH_PARKED_CRITICAL": "1000",
            "ERRORBUSD_HEALTH_DEAD_LETTERS_CRITICAL": "1",
        ]
        try await Daemon.withDaemon(environment: environment) { sandbox, daemon in
            var health = try await Self.health(daemon)
            #expect(health.status == 0, "\(health.standardOutput)")
            #expect(health.standardOutput.hasPrefix("ERRORBUSD OK - no job waiting, 0 parked, no open incident | "))
            #expect(health.standardOutput.contains(" parked=0;2;1000;0 "))
            #expect(health.standardOutput.contains(" free_space="))
            #expect(try await Self.status(daemon).statusLine == "OK: running, no open incident")

            try await Ctl.outage(sandbox, daemon, count: 3)
            health = try await Self.health(daemon)
            #expect(health.status == 1, "\(health.standardOutput)")
            #expect(health.standardOutput.hasPrefix("ERRORBUSD WARNING - "))
            #expect(health.standardOutput.contains("parked (warning from 2)"))
            // Performance data as the plugin guidelines write it: at most three decimals.
            let oldestJob = try Regex(#"\soldest_job=\d+(\.\d{1,3})?s;900;3600;0\s"#)
            #expect(health.standardOutput.contains(oldestJob), "\(health.standardOutput)")
            let status = try await Self.status(daemon)
            #expect(status.health.status == .warning)
            #expect(status.statusLine.hasPrefix("WARNING: \(status.health.summary); sync: "), "\(status.statusLine)")

            try await sandbox.clearFaults()
            try await DirectoryWatcher.wait(for: daemon.outbox) { $0.isEmpty }
            try await sandbox.fault(#"{"route":"items","mode":"invalid","detail":"no"}"#)
            try daemon.drop("bad.bin", content: Daemon.content(9))
            try await daemon.waitForLog("set aside as a dead letter: ")
            health = try await Self.health(daemon)
            #expect(health.status == 2, "\(health.standardOutput)")
            #expect(health.standardOutput.hasPrefix("ERRORBUSD CRITICAL - 1 dead letter waits for an operator (critical from 1)"), "\(health.standardOutput)")

            let json = try Ctl.json(Control.Health.self, try await Ctl.ctl(daemon, "health", "--json"), expectedStatus: 2)
            #expect(json.status == .critical)

            // The operator gives it up: no dead letter waits, and health says so at once, not an
            // hour later.
            #expect(try await Ctl.ctl(daemon, "discard", "--dead-letters").status == 0)
            health = try await Self.health(daemon)
            #expect(health.status == 0, "\(health.standardOutput)")
            #expect(health.standardOutput.contains(" dead_letters=0;1;1;0 "), "\(health.standardOutput)")
        }
    }

    /// A host whose every upload is held delivers nothing while work waits: a warning after
    /// `health.not-delivering.warning` (a minute by default; a millisecond here), long before
    /// the oldest job's age or the incident's are.
    @Test func workWaitingWhileNothingIsDeliveredIsAWarning() async throws {
        try await Daemon.withDaemon(environment: ["ERRORBUSD_HEALTH_NOT_DELIVERING_WARNING": "0.001s"]) { sandbox, daemon in
            var health = try await Self.health(daemon)
            #expect(health.status == 0, "\(health.standardOutput)")
            #expect(health.standardOutput.contains(" not_delivering=0s;0.001;900;0 "), "\(health.standardOutput)")
            try await Ctl.outage(sandbox, daemon, count: 3)
            health = try await Self.health(daemon)
            #expect(health.status == 1, "\(health.standardOutput)")
            #expect(health.standardOutput.hasPrefix("ERRORBUSD WARNING - nothing delivered for "), "\(health.standardOutput)")
            #expect(health.standardOutput.contains(" while 3 files wait (warning from 1ms)"), "\(health.standardOutput)")
            try await sandbox.clearFaults()
            try await DirectoryWatcher.wait(for: daemon.outbox) { $0.isEmpty }
            health = try await Self.health(daemon)
            #expect(health.status == 0, "\(health.standardOutput)")
        }
    }

    /// An incident that waits for an operator (the token endpoint refuses errorbusd's
    /// credentials) makes health CRITICAL, in its own check and gauge, until it is dealt with.
    @Test func anIncidentThatNeedsAnOperatorIsCritical() async throws {
        try await Daemon.withDaemon(beforeStart: { sandbox, _ in
            try await sandbox.fault(#"{"route":"token","mode":"rejectCredentials"}"#)
        }) { sandbox, daemon in
            try daemon.drop("item-0.bin", content: Daemon.content(0))
            try await daemon.waitForLog("needs an operator")
            var health = try await Self.health(daemon)
            #expect(health.status == 2, "\(health.standardOutput)")
            #expect(
                health.standardOutput.hasPrefix("ERRORBUSD CRITICAL - 1 incident needs an operator (incident 1: Credentials rejected) (critical from 1)"),
                "\(health.standardOutput)"
            )
            #expect(health.standardOutput.contains(" needs_operator=1;1;1;0 "), "\(health.standardOutput)")
            let metrics = try await Ctl.ctl(daemon, "metrics")
            #expect(metrics.standardOutput.contains(try Regex(#"errorbus_health_check_value\{check="needs_operator"\} 1(\.0)?\n"#)), "\(metrics.standardOutput)")

            // Given up by the operator: nothing waits for one any more.
            #expect(try await Ctl.ctl(daemon, "discard", "1").status == 0)
            health = try await Self.health(daemon)
            #expect(health.standardOutput.contains(" needs_operator=0;1;1;0 "), "\(health.standardOutput)")
            #expect(health.status == 0, "\(health.standardOutput)")
        }
    }

    @Test func healthIsUnknownWhenErrorbusdCannotBeAsked() async throws {
        let scratch = try ScratchDirectory("health")
        let finished = try await ChildProcess.run(Binaries.path("errorbusctl"), ["health", "--socket", scratch.file("none.socket")])
        #expect(finished.status == 3)
        #expect(finished.standardOutput.hasPrefix("ERRORBUSD UNKNOWN - errorbusd is not running (cannot connect to "))
    }
}
