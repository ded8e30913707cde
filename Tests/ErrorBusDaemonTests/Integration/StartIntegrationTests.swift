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

    /// When a test sends SIGTERM to a starting errorbusd.
    enum Moment: String, CaseIterable, Sendable {
        /// As soon as errorbusd catches it, which it does first, before it reads the
        /// configuration. (No earlier: a signal sent at once after the spawn meets the dynamic
        /// loader, before any code of the program runs, and its default action ends any program
        /// there.)
        case caught
        /// Once the store is opened, before the service group handles signals.
        case storeOpened
        /// Once errorbusd says it is ready.
        case ready
    }

    /// A SIGTERM while errorbusd starts stops it as one later does: exit 0, the store closed.
    /// Before the service group handled them, SIGTERM's default action ended errorbusd at once
    /// (killed by the signal, status 143), the store left open. Twenty starts a moment, for the
    /// race.
    @Test(arguments: Moment.allCases)
    func aSIGTERMWhileStartingStopsErrorbusdCleanly(at moment: Moment) async throws {
        let scratch = try ScratchDirectory("early-sigterm")
        // No API there: errorbusd starts, and stops, all the same.
        let daemon = try DaemonProcess(in: scratch, baseURL: "http://127.0.0.1:9", credentials: ["client-secret": "s3cret"])
        let wal = daemon.stateDirectory + "/errorbusd.sqlite-wal"
        for attempt in 1...20 {
            let child = try daemon.launch()
            switch moment {
            case .caught:
                #expect(await Self.waitUntilCatching(SIGTERM, child), "errorbusd exited before it caught SIGTERM")
            case .storeOpened:
                #expect(await child.standardError.wait(for: "Job store opened"))
            case .ready:
                #expect(await child.standardError.wait(for: "errorbusd ready"))
            }
            child.signal(SIGTERM)
            let finished = await child.waitForExit()
            #expect(finished.status == 0, "start \(attempt): exited with \(finished.status)\n\(finished.standardError)")
            #expect(finished.standardError.contains("Job store closed"), "start \(attempt):\n\(finished.standardError)")
            // Closing checkpoints the WAL into the database and empties it.
            let walSize = (try? FileManager.default.attributesOfItem(atPath: wal)[.size] as? Int) ?? 0
            #expect(walSize == 0, "start \(attempt): the store's WAL holds \(walSize) bytes")
            // Whether a signal caught at once was caught by the early handler or already by the
            // service group's depends on how fast the poll above saw it: on a loaded machine the
            // group may be first. So "caught" asserts the clean stop only; "storeOpened" is the
            // moment that always meets the early handler (status 143 without it).
            if finished.status != 0 { break }
        }
    }

    /// Waits, reading `/proc` without sleeping, until `child` catches `signal` (has a handler for
    /// it); false if it exits first.
    static func waitUntilCatching(_ signal: CInt, _ child: ChildProcess) async -> Bool {
        let bit = UInt64(1) << UInt64(signal - 1)
        while !child.hasExited {
            if let status = try? String(contentsOfFile: "/proc/\(child.processIdentifier)/status", encoding: .utf8),
                let line = status.split(separator: "\n").first(where: { $0.hasPrefix("SigCgt:") }),
                let caught = UInt64(line.dropFirst("SigCgt:".count).trimmingCharacters(in: .whitespaces), radix: 16),
                caught & bit != 0
            {
                return true
            }
            await Task.yield()
        }
        return false
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
