@testable import errorbusctl
import Foundation
import Testing

/// What errorbusctl says when errorbusd does not run, from `systemctl show`'s properties of the
/// two units (the runs under a real systemd are in scripts/test-package).
@Suite struct ServiceDiagnosisTests {
    static let show = """
        LoadState=loaded
        ActiveState=failed
        SubState=failed
        Result=exit-code
        UnitFileState=enabled
        ExecMainCode=1
        ExecMainStatus=127
        StateChangeTimestampMonotonic=5000000

        LoadState=loaded
        ActiveState=active
        SubState=listening
        Result=success
        UnitFileState=enabled
        """

    @Test func aStartThatCannotSucceedIsOneLineWithItsStatusAndTheJournal() {
        let diagnosis = ServiceDiagnosis(show: Self.show)
        #expect(diagnosis.socket["SubState"] == "listening")
        #expect(!diagnosis.isRunning)
        #expect(diagnosis.failed(since: 4_000_000))
        #expect(!diagnosis.failed(since: 6_000_000))
        let line = diagnosis.line(journal: "/usr/bin/errorbusd: error while loading shared libraries: libsqlite3.so.0")
        #expect(
            line == "errorbusd is not running: errorbusd.service exited with status 127 (the program or a library it needs is missing): /usr/bin/errorbusd: error while loading shared libraries: libsqlite3.so.0"
        )
        #expect(!line.contains("\n"))
    }

    @Test func aNewInstallationSaysHowToStart() {
        let idle = ["LoadState": "loaded", "ActiveState": "inactive", "SubState": "dead", "Result": "success", "UnitFileState": "disabled"]
        let diagnosis = ServiceDiagnosis(service: idle, socket: idle)
        #expect(
            diagnosis.line(journal: nil)
                == "errorbusd is not running: errorbusd.service and errorbusd.socket are neither enabled nor started: systemctl enable --now errorbusd.socket errorbusd.service"
        )
        var listening = idle
        listening["ActiveState"] = "active"
        #expect(ServiceDiagnosis(service: idle, socket: listening).reason == "errorbusd.service is stopped; errorbusd.socket starts it at the next call")
    }

    @Test func aUnitSystemdDoesNotKnowGivesNoReason() {
        let diagnosis = ServiceDiagnosis(service: ["LoadState": "not-found"], socket: [:])
        #expect(diagnosis.reason == nil)
    }

    /// A start that exits 78 is a configuration errorbusd cannot use: `health` calls it
    /// critical, not unknown.
    @Test func anExitWithStatus78IsAnUnusableConfiguration() {
        let unusable = ServiceDiagnosis(show: Self.show.replacingOccurrences(of: "ExecMainStatus=127", with: "ExecMainStatus=78"))
        #expect(unusable.configurationUnusable)
        #expect(unusable.reason == "errorbusd.service exited with status 78 (its configuration is unusable)")
        #expect(!ServiceDiagnosis(show: Self.show).configurationUnusable)
    }

    /// One journal entry as `journalctl -o json` writes it.
    static func entry(_ message: String, priority: Int = 6, transport: String = "stdout", logger: String? = nil) -> String {
        var fields = ["\"MESSAGE\":\"\(message)\"", "\"PRIORITY\":\"\(priority)\"", "\"_TRANSPORT\":\"\(transport)\"", "\"__CURSOR\":\"s=1\""]
        if let logger { fields.append("\"LOGGER\":\"\(logger)\"") }
        return "{" + fields.joined(separator: ",") + "}"
    }

    static let threadPriority = "Failed to set thread priority for worker thread: pqc: 0x55d1c8a0 tid: 4242 errno=13"

    /// On Debian 12 the Swift runtime's libdispatch writes its complaint about a thread's
    /// priority after errorbusd's own words: the one line names errorbusd's error, not that.
    @Test func theLastWordsAreErrorbusdsOwnError() {
        // A configuration it cannot use: the reason is its first line, before its logging starts.
        let configuration = [
            Self.entry("errorbusd: /etc/errorbusd/errorbusd.yaml:3: sync.concurrency: must be at least 1, got \\\"0\\\""),
            Self.entry("errorbusd: told 1 control client(s) that the configuration is unusable"),
            Self.entry(Self.threadPriority),
        ].joined(separator: "\n")
        #expect(
            LastWords(json: configuration).line
                == #"/etc/errorbusd/errorbusd.yaml:3: sync.concurrency: must be at least 1, got "0""#
        )

        // Stopped on an error while running: its own last entry of level error or critical.
        let running = [
            Self.entry("errorbusd 0.2.0 started", priority: 6, transport: "journal", logger: "errorbusd"),
            Self.entry("errorbusd stopped on an error: the store is closed", priority: 2, transport: "journal", logger: "errorbusd"),
            Self.entry("incident 1 still open when the bus stopped", priority: 5, transport: "journal", logger: "errorbus.bus"),
            Self.entry(Self.threadPriority),
        ].joined(separator: "\n")
        #expect(LastWords(json: running).line == "errorbusd stopped on an error: the store is closed")

        // With log.target stderr, its lines on the stream.
        let lines = [
            Self.entry("2026-11-26T23:45:28+0000 error errorbusd stopped on an error: disk full"),
            Self.entry(Self.threadPriority),
        ].joined(separator: "\n")
        #expect(LastWords(json: lines).line == "errorbusd stopped on an error: disk full")

        // Nothing of errorbusd's own: the last line that is not the runtime's complaint.
        let loader = [
            Self.entry("/usr/bin/errorbusd: error while loading shared libraries: libsqlite3.so.0: cannot open shared object file"),
            Self.entry(Self.threadPriority),
        ].joined(separator: "\n")
        #expect(LastWords(json: loader).line == "/usr/bin/errorbusd: error while loading shared libraries: libsqlite3.so.0: cannot open shared object file")
        #expect(LastWords(json: Self.entry(Self.threadPriority)).line == nil)
        #expect(LastWords(json: "").line == nil)
    }
}
