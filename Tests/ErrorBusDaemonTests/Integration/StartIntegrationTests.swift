import Foundation
import Glibc
import TestSupport
import Testing

/// The real `errorbusd` as a host without privileges runs it, and stopped while it starts.
@Suite("Integration: errorbusd's start", .serialized, .timeLimit(.minutes(3)))
struct StartIntegrationTests {
    /// What libdispatch logs when it may not give a worker thread the nice value of the thread's
    /// quality of service (a value below 0 needs `CAP_SYS_NICE` or a raised `RLIMIT_NICE`).
    static let priorityComplaint = "Failed to set thread priority for worker thread"

    /// nobody, whom errorbusd runs as here.
    static let nobody: uid_t = 65534

    /// As a user without privileges and with `RLIMIT_NICE` 0 (a container's systemd cannot
    /// raise it for `LimitNICE=`), errorbusd delivers a file without asking libdispatch for a
    /// thread priority it may not have.
    ///
    /// One complaint is left, and expected: libdispatch's manager thread (its timers and event
    /// sources, the service group's signal handling among them) runs at the user-interactive
    /// quality of service on Linux, nice -4, in any program that starts it; errorbusd cannot
    /// choose its level. That complaint also shows the test ran without the right to lower a
    /// nice value. Each thread of errorbusd's own work asking for more than the default priority
    /// (the store's queues did) would add one whenever it starts, at start and later.
    @Test(.enabled(if: getuid() == 0, "gives errorbusd up to nobody: runs as root"))
    func unprivilegedErrorbusdAsksNoThreadForAPriorityItMayNotHave() async throws {
        let setpriv = try #require(ChildProcess.find("setpriv"), "setpriv (util-linux) is needed")
        let prlimit = try #require(ChildProcess.find("prlimit"), "prlimit (util-linux) is needed")
        let scratch = try ScratchDirectory("unprivileged")
        let sandbox = try await SandboxProcess(in: scratch)
        // libdispatch logs to syslog unless told otherwise; here to standard error, with
        // errorbusd's own lines.
        let daemon = try DaemonProcess(in: scratch, sandbox: sandbox, environment: ["LIBDISPATCH_LOG": "stderr"])
        try Self.give(scratch.path, to: Self.nobody)
        do {
            let child = try daemon.launch(prefix: [
                prlimit, "--nice=0:0", setpriv, "--reuid=\(Self.nobody)", "--regid=\(Self.nobody)", "--clear-groups",
            ])
            guard await child.waitForStandardError(containing: "errorbusd ready") else {
                throw ChildProcessError(description: "errorbusd exited before it was ready:\n\(child.standardError.text)")
            }
            let content = Data("delivered by an errorbusd without privileges\n".utf8)
            try daemon.drop("item.bin", content: content)
            try await DirectoryWatcher.wait(for: daemon.outbox) { $0.isEmpty }
            #expect(try await sandbox.items().count == 1)

            let stopped = try await daemon.stop()
            #expect(stopped.status == 0, "\(stopped.standardError)")
            let complaints = stopped.errorLines.filter { $0.contains(Self.priorityComplaint) }
            #expect(complaints.count == 1, "libdispatch's manager thread's complaint alone was expected:\n\(complaints.joined(separator: "\n"))")
        } catch {
            _ = try? await daemon.kill()
            try? await sandbox.stop()
            throw error
        }
        try await sandbox.stop()
    }

    /// Makes `path` and everything under it `user`'s (and their group, the same number).
    static func give(_ path: String, to user: uid_t) throws {
        var paths = [path]
        if let enumerator = FileManager.default.enumerator(atPath: path) {
            for case let name as String in enumerator { paths.append(path + "/" + name) }
        }
        for path in paths where chown(path, user, gid_t(user)) != 0 {
            throw ChildProcessError(description: "chown \(path): errno \(errno)")
        }
    }
}
