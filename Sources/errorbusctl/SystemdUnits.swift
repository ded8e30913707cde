#if canImport(Glibc)
import Glibc

/// errorbusd's units as systemd sees them, asked with `systemctl show` and `journalctl` (the
/// documented interfaces; errorbusctl links no D-Bus library).
///
/// Only for errorbusd's own socket, and only where systemd runs: elsewhere (another socket,
/// errorbusd started by hand, a container without systemd) there is nothing to ask, and
/// ``current()`` is `nil`.
struct SystemdUnits: Sendable {
    /// Where `systemctl` and `journalctl` are, in the order tried.
    private static let directories = ["/usr/bin", "/bin"]

    private let systemctl: String
    private let journalctl: String?

    /// The units of errorbusd's default socket under a running systemd, or `nil`.
    init?(socket: String) {
        guard socket == ControlConnection.defaultSocket, access("/run/systemd/system", F_OK) == 0,
            let systemctl = Self.find("systemctl")
        else { return nil }
        self.systemctl = systemctl
        self.journalctl = Self.find("journalctl")
    }

    /// Both units' state now, or `nil` when systemctl cannot tell (a user without access to the
    /// system bus, say).
    func current() -> ServiceDiagnosis? {
        let properties = ServiceDiagnosis.properties.joined(separator: ",")
        guard
            let output = Self.run([
                systemctl, "show", "--timestamp=unix", "-p", properties, "errorbusd.service", "errorbusd.socket",
            ]),
            !output.isEmpty
        else { return nil }
        return ServiceDiagnosis(show: output)
    }

    /// What the service's last main process said last of why it stopped, from its journal
    /// entries (``LastWords``: errorbusd's own last error, else the dynamic loader's complaint,
    /// systemd's "Failed to execute", …), or `nil` when the caller may not read the journal or
    /// the process said nothing that tells.
    func lastWords(of diagnosis: ServiceDiagnosis) -> String? {
        guard let journalctl, let pid = diagnosis.service["ExecMainPID"], pid != "0" else { return nil }
        // The last entries are enough: the runtime's complaints come by a few, not by hundreds.
        var arguments = [
            journalctl, "--no-pager", "--quiet", "--output=json", "--output-fields=\(LastWords.fields.joined(separator: ","))",
            "--lines=200", "_PID=\(pid)",
        ]
        if let started = diagnosis.service["ExecMainStartTimestamp"], started.hasPrefix("@") {
            arguments.insert("--since=\(started)", at: 1)
        }
        guard let output = Self.run(arguments) else { return nil }
        return LastWords(json: output).line
    }

    private static func find(_ name: String) -> String? {
        directories.map { "\($0)/\(name)" }.first { access($0, X_OK) == 0 }
    }

    /// Runs a program with no standard input and standard error discarded; its standard output,
    /// or `nil` when it cannot be run or exits with another status than 0. Both programs answer
    /// within milliseconds; errorbusctl waits for them on the calling thread.
    private static func run(_ arguments: [String]) -> String? {
        var pipe: [Int32] = [-1, -1]
        // Close-on-exec (Glibc does not export pipe2): the child gets the write end as its
        // standard output only.
        guard Glibc.pipe(&pipe) == 0 else { return nil }
        _ = fcntl(pipe[0], F_SETFD, FD_CLOEXEC)
        _ = fcntl(pipe[1], F_SETFD, FD_CLOEXEC)
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, STDIN_FILENO, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_adddup2(&actions, pipe[1], STDOUT_FILENO)
        posix_spawn_file_actions_addopen(&actions, STDERR_FILENO, "/dev/null", O_WRONLY, 0)
        // No pager and no colours, whatever the caller's environment says.
        let environment = ["SYSTEMD_PAGER=", "SYSTEMD_COLORS=0", "LC_ALL=C.UTF-8", "PATH=/usr/bin:/bin"]
        var pid: pid_t = 0
        let spawned = withCStrings(arguments) { argv in
            withCStrings(environment) { envp in posix_spawn(&pid, arguments[0], &actions, nil, argv, envp) }
        }
        close(pipe[1])
        defer { close(pipe[0]) }
        guard spawned == 0 else { return nil }
        var output: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        while true {
            let count = read(pipe[0], &buffer, buffer.count)
            if count < 0, errno == EINTR { continue }
            guard count > 0 else { break }
            output += buffer[..<count]
        }
        var status: Int32 = 0
        while waitpid(pid, &status, 0) < 0, errno == EINTR {}
        // WIFEXITED and WEXITSTATUS, which Swift does not import.
        guard status & 0x7f == 0, (status >> 8) & 0xff == 0 else { return nil }
        return String(decoding: output, as: UTF8.self)
    }

    /// `body` with a NULL-terminated C array of the strings.
    private static func withCStrings<R>(_ strings: [String], _ body: ([UnsafeMutablePointer<CChar>?]) -> R) -> R {
        let pointers = strings.map { strdup($0) } + [nil]
        defer { pointers.forEach { free($0) } }
        return body(pointers)
    }
}
#endif
