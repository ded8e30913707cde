@testable import errorbusctl
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
}
