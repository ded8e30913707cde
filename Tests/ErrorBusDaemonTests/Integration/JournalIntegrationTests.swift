import ErrorBusDaemon
import Foundation
import Glibc
import TestSupport
import Testing

/// Where the real errorbusd logs (`log.target`), and its incident entries gathered from a host's
/// journal into a central one by the real `systemd-journal-upload` and `systemd-journal-remote`.
///
/// Each test that needs a journal uses a private one (``Faults/Journal/PrivateJournal``: a mount
/// namespace with its own journald), so the machine's journal, which other tests write to, is
/// neither read nor disturbed.
@Suite(.enabled(if: geteuid() == 0, "mount namespaces and a journald need root"), .timeLimit(.minutes(2)))
struct JournalIntegrationTests {
    static let journalRemote = "/lib/systemd/systemd-journal-remote"
    static let journalUpload = "/lib/systemd/systemd-journal-upload"
    static let socketActivate = "/usr/bin/systemd-socket-activate"

    /// `log.target: journal` with no journald: errorbusd does not start, and says why.
    @Test func journalTargetWithoutAJournalSocketDoesNotStart() async throws {
        let scratch = try ScratchDirectory("journal-target")
        let daemon = try DaemonProcess(in: scratch, baseURL: "http://127.0.0.1:9", credentials: ["client-secret": "s"], environment: ["ERRORBUSD_LOG_TARGET": "journal"])
        // The journal socket's directory hidden by an empty tmpfs, in a mount namespace of errorbusd's own.
        let child = try daemon.launch(prefix: [
            "/usr/bin/unshare", "--mount", "--propagation", "private", "/bin/sh", "-c",
            #"mount -t tmpfs -o size=1m,mode=0755 tmpfs /run/systemd/journal && exec "$0" "$@""#,
        ])
        // Bounded, so that an errorbusd that does start is ended here rather than left running.
        if !(await Self.within(.seconds(20)) { await child.standardError.waitForEnd(); return true }) {
            child.signal(SIGKILL)
        }
        let finished = await child.waitForExit()
        #expect(finished.status == 78, "\(finished.standardError)")
        #expect(
            finished.standardError.contains("log.target: is journal, but /run/systemd/journal/socket does not exist (no systemd-journald here)"),
            "\(finished.standardError)"
        )
    }

    /// `log.target: stderr` writes lines even where `$JOURNAL_STREAM` names standard error (which
    /// `auto` would take for the journal), message first, fields after.
    @Test func stderrTargetWritesLinesWhereAutoWouldWriteTheJournal() async throws {
        let scratch = try ScratchDirectory("stderr-target")
        let sandbox = try await SandboxProcess(in: scratch)
        let daemon = try DaemonProcess(in: scratch, sandbox: sandbox, environment: ["ERRORBUSD_LOG_TARGET": "stderr"])
        do {
            let child = try daemon.launch(prefix: [
                "/bin/sh", "-c", #"export JOURNAL_STREAM="$(stat -L -c %d:%i /proc/self/fd/2)"; exec "$0" "$@""#,
            ])
            guard await Self.within(.seconds(30), { await child.standardError.wait(for: "errorbusd ready") }) else {
                throw ChildProcessError(description: "errorbusd wrote no ready line on standard error:\n\(child.standardError.text)")
            }
            try await sandbox.fault(#"{"route":"all","mode":"down"}"#)
            try daemon.drop("one.bin", content: DaemonIntegrationTests.content(1))
            guard await Self.within(.seconds(30), { await child.standardError.wait(for: "incident 1 opened: ") }) else {
                throw ChildProcessError(description: "no incident on standard error:\n\(child.standardError.text)")
            }
            // TIME LEVEL MESSAGE, then the fields.
            let opened = try #require(daemon.log.split(separator: "\n").first { $0.contains("incident 1 opened: ") })
            let words = opened.split(separator: " ", maxSplits: 3)
            try #require(words.count == 4, "\(opened)")
            #expect(words[0].count >= 24 && words[0].contains("T"), "a time first: \(opened)")
            #expect(words[1] == "warning", "\(opened)")
            #expect(words[2] == "incident", "\(opened)")
            let fields = try #require(opened.range(of: " ERRORBUS_CATEGORY=transient ERRORBUS_INCIDENT=1 ERRORBUS_INCIDENT_ID="), "\(opened)")
            #expect(opened.range(of: "incident 1 opened: ")!.lowerBound < fields.lowerBound)
            #expect(opened.contains(" MESSAGE_ID=e44d68978ee64cfc9599df6a0d606e34"), "\(opened)")
            try await sandbox.clearFaults()
            guard await Self.within(.seconds(30), { await child.standardError.wait(for: "incident 1 recovered") }) else {
                throw ChildProcessError(description: "the incident did not recover:\n\(child.standardError.text)")
            }
            let stopped = try await daemon.stop()
            #expect(stopped.status == 0, "\(stopped.standardError)")
        } catch {
            _ = try? await daemon.kill()
            try? await sandbox.stop()
            throw error
        }
        try await sandbox.stop()
    }

    /// A host's errorbusd logs to its journal (`log.target: journal`, no `$JOURNAL_STREAM`), has
    /// an incident, and `systemd-journal-upload` sends the host's journal to
    /// `systemd-journal-remote` on 127.0.0.1: the central journal answers "which hosts had an
    /// incident at this scope" and "every entry of this incident" by `ERRORBUS_INCIDENT_ID`.
    @Test func incidentEntriesReachACentralJournalAndAreFoundByScopeAndIncidentID() async throws {
        for binary in [Self.journalRemote, Self.journalUpload, Self.socketActivate] {
            try #require(FileManager.default.isExecutableFile(atPath: binary), "\(binary) is missing: apt-get install systemd-journal-remote")
        }
        let scratch = try ScratchDirectory("journal-remote")
        let journal = try await Faults.Journal.PrivateJournal(directory: scratch.path)
        let sandbox = try await SandboxProcess(in: scratch)
        let daemon = try DaemonProcess(in: scratch, sandbox: sandbox, environment: ["ERRORBUSD_LOG_TARGET": "journal"])
        let central = scratch.file("remote")
        try FileManager.default.createDirectory(atPath: central, withIntermediateDirectories: true)
        var remote: ChildProcess?
        var follower: ChildProcess?
        do {
            try await journal.startJournald()
            // errorbusd's entries in the host's journal as journald stores them, awaited as they come.
            follower = try ChildProcess("/usr/bin/nsenter", [
                journal.namespace, "/usr/bin/journalctl", "--follow", "--lines=all", "--output=cat", "--no-pager", "SYSLOG_IDENTIFIER=errorbusd",
            ])
            let child = try daemon.launch(prefix: ["/usr/bin/nsenter", journal.namespace])
            let entries = follower!.standardOutput
            guard await Self.within(.seconds(30), { await entries.wait(for: "errorbusd ready") }) else {
                throw ChildProcessError(description: "no ready entry in the journal; errorbusd's standard error:\n\(child.standardError.text)")
            }
            try await sandbox.fault(#"{"route":"all","mode":"down"}"#)
            try daemon.drop("one.bin", content: DaemonIntegrationTests.content(1))
            guard await Self.within(.seconds(30), { await entries.wait(for: "incident 1 opened: ") }) else {
                throw ChildProcessError(description: "no incident in the journal:\n\(follower!.standardOutput.text)")
            }
            try await sandbox.clearFaults()
            guard await Self.within(.seconds(30), { await entries.wait(for: "incident 1 recovered") }) else {
                throw ChildProcessError(description: "the incident did not recover:\n\(follower!.standardOutput.text)")
            }
            let stopped = try await daemon.stop()
            #expect(stopped.status == 0, "\(stopped.standardError)")
            // Every entry went to the journal, none to standard error.
            #expect(!stopped.standardError.contains("errorbusd ready"), "\(stopped.standardError)")
            #expect(!stopped.standardError.contains("incident 1"), "\(stopped.standardError)")

            // The central host: systemd-journal-remote on a socket systemd-socket-activate holds
            // (so the port is listening before the upload starts), one file per sending host.
            let port = try ClosedPort.find()
            remote = try ChildProcess(Self.socketActivate, [
                "--listen=127.0.0.1:\(port)", Self.journalRemote, "--listen-http=-3", "--output=\(central)/", "--split-mode=host",
            ])
            let activation = remote!.standardError
            guard await Self.within(.seconds(30), { await activation.wait(for: "Listening on 127.0.0.1:\(port)") }) else {
                throw ChildProcessError(description: "systemd-socket-activate did not listen: \(remote!.standardError.text)")
            }
            // The host: everything in its journal, then it stops (--follow=no).
            let upload = try await ChildProcess.run("/usr/bin/nsenter", [
                journal.namespace, Self.journalUpload, "--url=http://127.0.0.1:\(port)", "--follow=no",
            ])
            #expect(upload.status == 0, "systemd-journal-upload: \(upload.standardError)")
            let received = try FileManager.default.contentsOfDirectory(atPath: central)
            #expect(received.contains { $0.hasPrefix("remote-") && $0.hasSuffix(".journal") }, "\(received)")

            // Which hosts had an incident at this scope in the last hour.
            let opened = try await Self.entries(in: central, [
                "--since=-1h", "SYSLOG_IDENTIFIER=errorbusd", "MESSAGE_ID=e44d68978ee64cfc9599df6a0d606e34", "ERRORBUS_SCOPE=\(sandbox.baseURL)",
            ])
            try #require(opened.count == 1, "\(opened.map(\.fields))")
            // The host that sent it, as journald stamped it (what docs/journal.md lists hosts by).
            #expect(opened[0]["_HOSTNAME"]?.isEmpty == false, "\(opened[0].fields)")
            #expect(opened[0]["ERRORBUS_INCIDENT"] == "1")
            let key = try #require(opened[0]["ERRORBUS_INCIDENT_ID"], "\(opened[0].fields)")
            #expect(UUID(uuidString: key) != nil, "\(key)")
            // Every entry of that incident, by its key alone: opened and recovered.
            let story = try await Self.entries(in: central, ["ERRORBUS_INCIDENT_ID=\(key)"])
            #expect(story.compactMap { $0["MESSAGE_ID"] } == ["e44d68978ee64cfc9599df6a0d606e34", "922e01c430864cbe9849f334ff057a57"], "\(story.map(\.fields))")
            #expect(story.allSatisfy { $0["ERRORBUS_INCIDENT"] == "1" && $0["ERRORBUS_SCOPE"] == sandbox.baseURL })
        } catch {
            _ = try? await daemon.kill()
            await Self.end(remote, follower)
            try? await sandbox.stop()
            await journal.close()
            throw error
        }
        await Self.end(remote, follower)
        try await sandbox.stop()
        await journal.close()
    }

    /// What `wait` answers, or `false` once `limit` passed first (the wait is cancelled): a
    /// test that fails ends what it started instead of running into its time limit.
    static func within(_ limit: Duration, _ wait: @escaping @Sendable () async -> Bool) async -> Bool {
        await withTaskGroup(of: Bool?.self) { group in
            group.addTask { await wait() }
            group.addTask {
                try? await Task.sleep(for: limit)
                return nil
            }
            let first = await group.next() ?? nil
            group.cancelAll()
            return first ?? false
        }
    }

    /// The entries of the journal files in `directory` matching `arguments`, oldest first.
    static func entries(in directory: String, _ arguments: [String]) async throws -> [JournalRecord] {
        let run = try await ChildProcess.run("/usr/bin/journalctl", ["--directory=\(directory)", "--output=json", "--all", "--no-pager"] + arguments)
        #expect(run.status == 0 || run.standardOutput.isEmpty, "journalctl: \(run.standardError)")
        return try run.outputLines.compactMap { line in
            (try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any]).map(JournalRecord.init(json:))
        }
    }

    static func end(_ processes: ChildProcess?...) async {
        for process in processes.compactMap({ $0 }) {
            process.terminate()
            _ = await process.waitForExit()
        }
    }
}
