/// Why errorbusd is not running, as systemd knows it: what errorbusctl says when the control
/// socket does not answer, instead of waiting for a reply that cannot come.
///
/// A start that cannot succeed (a missing library, a binary of another architecture, a
/// configuration errorbusd cannot use before it can answer) leaves errorbusd.socket listening
/// and errorbusd.service failed: a call is accepted by the socket, starts the service, and the
/// service ends without answering it. The unit's last result and what its process said last
/// in the journal (errorbusd's own last error, ``LastWords``) say why, in one line:
///
///     errorbusd is not running: errorbusd.service exited with status 127 at its start:
///     /usr/bin/errorbusd: error while loading shared libraries: libsqlite3.so.0: cannot open …
///
/// This value reads `systemctl show`'s properties of both units; ``SystemdUnits`` asks for them.
/// It decides nothing by itself about time: ``failed(since:)`` says whether a start attempt
/// ended after a given moment (the call's), so that a failure older than the call is not taken
/// for the call's.
struct ServiceDiagnosis: Equatable {
    /// `systemctl show errorbusd.service`'s properties (`Name=value`).
    var service: [String: String]
    /// `systemctl show errorbusd.socket`'s properties.
    var socket: [String: String]

    /// The properties asked for, of either unit.
    static let properties = [
        "LoadState", "ActiveState", "SubState", "Result", "UnitFileState", "ExecMainCode", "ExecMainStatus",
        "ExecMainPID", "ExecMainStartTimestamp", "InactiveEnterTimestampMonotonic",
        "StateChangeTimestampMonotonic",
    ]

    /// Reads `systemctl show -p … errorbusd.service errorbusd.socket`: one block of `Name=value`
    /// lines per unit, in that order, separated by an empty line.
    init(show output: String) {
        let blocks = output.split(separator: "\n\n", omittingEmptySubsequences: false).map { block in
            Dictionary(
                block.split(separator: "\n").compactMap { line -> (String, String)? in
                    guard let equals = line.firstIndex(of: "=") else { return nil }
                    return (String(line[..<equals]), String(line[line.index(after: equals)...]))
                },
                uniquingKeysWith: { _, last in last }
            )
        }
        service = blocks.first ?? [:]
        socket = blocks.count > 1 ? blocks[1] : [:]
    }

    init(service: [String: String], socket: [String: String]) {
        self.service = service
        self.socket = socket
    }

    /// The service runs (or reloads): it will answer, or the call's own timeout applies.
    var isRunning: Bool {
        ["active", "reloading"].contains(service["ActiveState"])
    }

    /// Its last run exited with status 78 (`EX_CONFIG`): errorbusd cannot use its configuration,
    /// and every start ends so until an administrator fixes it.
    var configurationUnusable: Bool {
        service["Result"] == "exit-code" && service["ExecMainStatus"] == "78"
    }

    /// The service is being started or stopped, or waits to be started again.
    var isChanging: Bool {
        ["activating", "deactivating"].contains(service["ActiveState"]) || service["SubState"] == "auto-restart"
    }

    /// Whether a start of the service ended in failure after `moment` (CLOCK_MONOTONIC, in
    /// microseconds, as systemd's `…TimestampMonotonic` properties count): the service failed, or
    /// waits to be started again, and got there after `moment`.
    func failed(since moment: UInt64) -> Bool {
        let failed = service["ActiveState"] == "failed" || service["SubState"] == "auto-restart"
            || (service["ActiveState"] == "inactive" && service["Result"].map { $0 != "success" } ?? false)
        guard failed else { return false }
        let changed = UInt64(service["StateChangeTimestampMonotonic"] ?? "") ?? 0
        return changed > moment
    }

    /// Why the service does not run, in words: what systemd recorded of its last run, or why
    /// nothing starts it. `nil` when systemd does not know the unit.
    var reason: String? {
        guard service["LoadState"] == "loaded" else { return nil }
        if isRunning { return "errorbusd.service is running but did not answer" }
        let result = service["Result"] ?? "success"
        if result != "success" || service["ActiveState"] == "failed" {
            var text = "errorbusd.service \(outcome(result))"
            if service["SubState"] == "auto-restart" { text += " and will be started again" }
            return text
        }
        let listening = socket["ActiveState"] == "active"
        if listening { return "errorbusd.service is stopped; errorbusd.socket starts it at the next call" }
        let enabled = service["UnitFileState"] == "enabled" || socket["UnitFileState"] == "enabled"
        return enabled
            ? "errorbusd.service and errorbusd.socket are stopped: systemctl start errorbusd.socket errorbusd.service"
            : "errorbusd.service and errorbusd.socket are neither enabled nor started: systemctl enable --now errorbusd.socket errorbusd.service"
    }

    /// The one line errorbusctl prints: the reason, and what the process that failed said last
    /// (``LastWords``) when there is something.
    func line(journal: String?) -> String {
        let reason = reason ?? "errorbusd.service is unknown to systemd"
        if let journal, !journal.isEmpty {
            return "errorbusd is not running: \(reason): \(journal)"
        }
        let failed = (service["Result"] ?? "success") != "success"
        return "errorbusd is not running: \(reason)" + (failed ? " (journalctl -u errorbusd says more)" : "")
    }

    /// How the last run ended, from `Result`, `ExecMainCode` (1 exited, 2 killed, 3 dumped core)
    /// and `ExecMainStatus`.
    private func outcome(_ result: String) -> String {
        let status = service["ExecMainStatus"] ?? ""
        switch result {
        case "exit-code" where !status.isEmpty && status != "0":
            return "exited with status \(status)" + (Self.statusMeaning[status].map { " (\($0))" } ?? "")
        case "signal", "core-dump":
            return "was killed by signal \(status)" + (result == "core-dump" ? " and dumped core" : "")
        case "watchdog":
            return "stopped answering its watchdog and was killed"
        case "timeout":
            return "did not start or stop in time"
        case "start-limit-hit":
            return "was started too often in a short time (systemctl reset-failed errorbusd to allow more)"
        case "exec-condition", "condition":
            return "was not started: a condition of the unit was not met"
        case "resources":
            return "could not be set up by systemd (resources)"
        default:
            return "failed (\(result))"
        }
    }

    /// What an exit status of a start that cannot succeed means: the shell's and the dynamic
    /// loader's conventions, systemd's own (`systemd.exec(5)`, "Process Exit Codes"), sysexits.
    static let statusMeaning = [
        "78": "its configuration is unusable",
        "126": "the program cannot be executed",
        "127": "the program or a library it needs is missing",
        "203": "systemd could not execute the program",
        "217": "its user does not exist",
        "243": "systemd could not load its credentials",
    ]
}
