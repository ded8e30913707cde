import Dispatch
import Foundation
import Glibc
@testable import Sandbox
import Synchronization
import TestSupport
import Testing

extension Faults {
    /// errorbusd logging natively to a journald that goes away mid-run and comes back.
    ///
    /// The journald is a private one: it runs in a mount namespace of the test's (`unshare
    /// --mount`) with tmpfs over `/run/systemd/journal`, `/run/log/journal` and `/var/log/journal`,
    /// so that the machine's own journal (which other tests write to) is never stopped, and
    /// errorbusd, entered into the same namespace, finds it at libsystemd's fixed socket path.
    @Suite(.enabled(if: geteuid() == 0, "a mount namespace and a journald need root"), .timeLimit(.minutes(2)))
    struct Journal {
        /// A mount namespace with an empty journal of its own, and the journald serving it.
        final class PrivateJournal: Sendable {
            let holder: ChildProcess
            let directory: String
            private let journald = Mutex<ChildProcess?>(nil)
            private let starts = Mutex(0)

            /// `nsenter`'s argument for the namespace.
            var namespace: String { "--mount=/proc/\(holder.processIdentifier)/ns/mnt" }

            init(directory: String) async throws {
                self.directory = directory
                let script = """
                    set -e
                    for d in /run/systemd/journal /run/log/journal /var/log/journal; do
                        mkdir -p "$d"; mount -t tmpfs -o mode=0755 tmpfs "$d"
                    done
                    echo namespace ready
                    exec sleep infinity
                    """
                holder = try ChildProcess("/usr/bin/unshare", ["--mount", "--propagation", "private", "/bin/sh", "-c", script])
                guard await holder.waitForStandardOutput(containing: "namespace ready") else {
                    throw ChildProcessError(description: "no mount namespace: \(holder.standardError.text)")
                }
            }

            /// Starts journald in the namespace and waits for its `READY=1`.
            func startJournald() async throws {
                let number = starts.withLock { $0 += 1; return $0 }
                let notify = try TestSocket.datagram(boundTo: directory + "/journald-notify-\(number).sock")
                let child = try ChildProcess("/usr/bin/nsenter", [namespace, "/lib/systemd/systemd-journald"], environment: ["NOTIFY_SOCKET": notify.path])
                journald.withLock { $0 = child }
                try await RawVarlink.blocking {
                    while true {
                        let state = try notify.receive(timeout: 10)
                        if state.split(separator: "\n").contains("READY=1") { return }
                    }
                }
            }

            /// Stops journald (SIGTERM) and waits for it to exit.
            func stopJournald() async {
                guard let child = journald.withLock({ $0.take() }) else { return }
                child.terminate()
                _ = await child.waitForExit()
            }

            /// The messages errorbusd's entries in this journal carry, oldest first.
            func messages() async throws -> [String] {
                let run = try await ChildProcess.run(
                    "/usr/bin/nsenter",
                    [namespace, "/usr/bin/journalctl", "-o", "json", "--all", "--no-pager", "SYSLOG_IDENTIFIER=errorbusd"]
                )
                return try run.outputLines.compactMap { line in
                    let object = try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any]
                    return object.map(JournalRecord.init(json:))?["MESSAGE"]
                }
            }

            /// Polls journalctl (journald may need a moment to write) until `condition` holds
            /// for errorbusd's messages, at most ten seconds.
            func waitForMessages(_ condition: ([String]) -> Bool) async throws -> [String] {
                var messages: [String] = []
                for attempt in 0..<100 {
                    if attempt > 0 { try await Task.sleep(for: .milliseconds(100)) }
                    messages = try await self.messages()
                    if condition(messages) { return messages }
                }
                return messages
            }

            func close() async {
                await stopJournald()
                holder.signal(SIGKILL)
                _ = await holder.waitForExit()
            }
        }

        @Test func journaldGoingAwayAndComingBackNeitherStallsNorLosesLogging() async throws {
            let scratch = try ScratchDirectory("faults-journal")
            let journal = try await PrivateJournal(directory: scratch.path)
            let sandbox = try await SandboxProcess(in: scratch)
            let daemon = try DaemonProcess(in: scratch, sandbox: sandbox)
            do {
                try await journal.startJournald()
                // In the namespace, with $JOURNAL_STREAM naming its standard error: errorbusd
                // then logs natively, as under systemd.
                let child = try daemon.launch(prefix: [
                    "/usr/bin/nsenter", journal.namespace, "/bin/sh", "-c",
                    #"export JOURNAL_STREAM="$(stat -L -c %d:%i /proc/self/fd/2)"; exec "$0" "$@""#,
                ])
                try await DirectoryWatcher.wait(for: scratch.path) { $0.contains("control.socket") }
                let ready = try await journal.waitForMessages { $0.contains { $0.hasPrefix("errorbusd ready") } }
                #expect(ready.contains { $0.hasPrefix("errorbusd ready") }, "\(ready)\n\(child.standardError.text)")
                #expect(!child.standardError.text.contains("errorbusd ready"))
                for number in 0..<3 { try daemon.drop("before-\(number).bin", content: DaemonIntegrationTests.content(number)) }
                try await DirectoryWatcher.wait(for: daemon.outbox) { $0.isEmpty }

                // journald exits: errorbusd says so on standard error and logs there, and keeps
                // working through an outage meanwhile.
                await journal.stopJournald()
                try await sandbox.fault(#"{"route":"all","mode":"down"}"#)
                for number in 3..<13 { try daemon.drop("during-\(number).bin", content: DaemonIntegrationTests.content(number)) }
                try await daemon.waitForLog("journal unreachable at /run/systemd/journal/socket")
                try await daemon.waitForParked(10, under: 1)
                let status = try await Faults.statusAnswers(daemon)
                #expect((status["incidents"] as? [Any])?.count == 1)
                try await sandbox.clearFaults()
                try await daemon.waitForLog("incident 1 recovered")
                try await DirectoryWatcher.wait(for: daemon.outbox) { $0.isEmpty }
                _ = try await Faults.statusAnswers(daemon)

                // journald is back: the next attempt (one per second) finds it; errorbusd says
                // how many entries went to standard error meanwhile, there and in the journal.
                try await journal.startJournald()
                let reloader = try RawVarlink(daemon.controlSocket)
                var reloads = 0
                while !child.standardError.text.contains("journal reachable again"), reloads < 10_000 {
                    // Something to log (a reload is logged), answered once it is done.
                    let reply = try await reloader.call(#"{"method":"io.errorbus.Control.Reload"}"#)
                    #expect(reply?["error"] == nil, "\(String(describing: reply?.object))")
                    reloads += 1
                }
                try await daemon.waitForLog("journal reachable again; ")
                let recovery = child.standardError.text.split(separator: "\n").first { $0.contains("journal reachable again; ") } ?? ""
                print("journal: back after \(reloads) reloads: \(recovery)")
                let back = try await journal.waitForMessages { $0.contains { $0.hasPrefix("journal reachable again; ") } }
                #expect(back.contains { $0.hasPrefix("journal reachable again; ") }, "\(back)")
                let reloadedInJournal = back.filter { $0 == "configuration reloaded" }.count
                // And later entries go to the journal again.
                #expect(try await reloader.call(#"{"method":"io.errorbus.Control.Reload"}"#)?["error"] == nil)
                let later = try await journal.waitForMessages { $0.filter { $0 == "configuration reloaded" }.count > reloadedInJournal }
                #expect(later.filter { $0 == "configuration reloaded" }.count > reloadedInJournal)
                try daemon.drop("after.bin", content: DaemonIntegrationTests.content(13))
                try await DirectoryWatcher.wait(for: daemon.outbox) { $0.isEmpty }
                #expect(try await sandbox.stats().items.distinct == 14)

                let stopped = try await daemon.stop()
                #expect(stopped.status == 0, "\(stopped.standardError)")
            } catch {
                _ = try? await daemon.kill()
                try? await sandbox.stop()
                await journal.close()
                throw error
            }
            try await sandbox.stop()
            await journal.close()
        }
    }
}
