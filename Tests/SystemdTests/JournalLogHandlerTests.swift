import Foundation
import Glibc
import Logging
import Systemd
import Testing
import TestSupport

/// The journal `LogHandler` against a real systemd-journald, read back with journalctl.
@Suite struct JournalLogHandlerTests {
    struct Upload: Error, CustomStringConvertible {
        var description: String { "upload of job 7 failed" }
    }

    @Test(arguments: [
        ("MESSAGE_ID", "MESSAGE_ID"),
        ("ERRORBUS_INCIDENT", "ERRORBUS_INCIDENT"),
        ("request.id", "REQUEST_ID"),
        ("errorbus.service", "ERRORBUS_SERVICE"),
        ("trace-id", "TRACE_ID"),
        ("a..b--c.", "A_B_C"),
        ("multi line", "MULTI_LINE"),
        ("Größe", "GR_E"),
        ("_private", "PRIVATE"),
        ("_SYSTEMD_UNIT", "SYSTEMD_UNIT"),
        ("2fa", "F_2FA"),
        ("message", "F_MESSAGE"),
        ("MESSAGE", "F_MESSAGE"),
        ("priority", "F_PRIORITY"),
        ("code.line", "F_CODE_LINE"),
        ("LOGGER", "F_LOGGER"),
        ("", "FIELD"),
        ("---", "FIELD"),
        (String(repeating: "a", count: 80), String(repeating: "A", count: 64)),
        (String(repeating: "B", count: 65), String(repeating: "B", count: 64)),
        ("9" + String(repeating: "c", count: 70), "F_9" + String(repeating: "C", count: 61)),
    ])
    func metadataKeysBecomeValidJournalFieldNames(key: String, expected: String) {
        #expect(JournalLogHandler.fieldName(forMetadataKey: key) == expected)
    }

    @Test(.timeLimit(.minutes(1))) func writesAStructuredEntryToJournald() async throws {
        try Journald.ensureRunning()
        let marker = UUID().uuidString
        let fallback = try FallbackCapture()
        let writer = JournalWriter(fallbackFileDescriptor: fallback.writeEnd)
        var logger = Logger(label: "errorbus.test.journal") {
            JournalLogHandler(
                label: $0,
                writer: writer,
                syslogIdentifier: "errorbus-tests",
                metadataProvider: Logger.MetadataProvider { ["trace-id": "trace-1", "shared": "provider"] }
            )
        }
        logger[metadataKey: "ERRORBUS_TEST_MARKER"] = "\(marker)"
        logger[metadataKey: "request.id"] = "req-7"
        logger[metadataKey: "shared"] = "handler"

        let line = #line + 1
        logger.warning(
            "first line\nsecond line",
            metadata: [
                "MESSAGE_ID": "8d2a3e6f0c1b4e5a9f7d6c5b4a392817",
                "multi line": "alpha\nbeta\n",
                "shared": "message",
                "message": "not the message",
                "_private": "p",
                "2fa": "on",
                "jobs": .array(["a", "b"]),
            ]
        )

        let entries = try await Journalctl.entries(["ERRORBUS_TEST_MARKER=\(marker)"], atLeast: 1)
        try #require(entries.count == 1, "journalctl found \(entries.count) entries for the marker")
        let entry = entries[0]
        #expect(entry["MESSAGE"] == "first line\nsecond line")
        #expect(entry["PRIORITY"] == "4")
        #expect(entry["CODE_FILE"] == #fileID)
        #expect(entry["CODE_LINE"] == "\(line)")
        #expect(entry["CODE_FUNC"] == #function)
        #expect(entry["SYSLOG_IDENTIFIER"] == "errorbus-tests")
        #expect(entry["LOGGER"] == "errorbus.test.journal")
        #expect(entry["MESSAGE_ID"] == "8d2a3e6f0c1b4e5a9f7d6c5b4a392817")
        #expect(entry["REQUEST_ID"] == "req-7")
        #expect(entry["TRACE_ID"] == "trace-1")
        #expect(entry["SHARED"] == "message", "the log call's metadata wins over provider and handler")
        #expect(entry["MULTI_LINE"] == "alpha\nbeta\n")
        #expect(entry["F_MESSAGE"] == "not the message")
        #expect(entry["PRIVATE"] == "p")
        #expect(entry["F_2FA"] == "on")
        #expect(entry["JOBS"] == #"["a", "b"]"#)
        #expect(entry["_PID"] == "\(getpid())", "journald stamped it as ours: it came in natively")
        #expect(entry["_TRANSPORT"] == "journal")
        #expect(try fallback.captured() == "", "nothing may go to the fallback while the journal answers")
        #expect(writer.isJournalReachable)
    }

    @Test(.timeLimit(.minutes(1))) func mapsEveryLevelToItsSyslogPriority() async throws {
        try Journald.ensureRunning()
        let marker = UUID().uuidString
        let writer = JournalWriter()
        var logger = Logger(label: "errorbus.test.levels") { JournalLogHandler(label: $0, writer: writer) }
        logger.logLevel = .trace
        logger[metadataKey: "ERRORBUS_TEST_MARKER"] = "\(marker)"
        for level in Logger.Level.allCases {
            logger.log(level: level, "\(level)")
        }

        let entries = try await Journalctl.entries(["ERRORBUS_TEST_MARKER=\(marker)"], atLeast: 7)
        var priorities: [String: String] = [:]
        for entry in entries {
            if let message = entry["MESSAGE"] { priorities[message] = entry["PRIORITY"] }
        }
        #expect(
            priorities == [
                "trace": "7", "debug": "7", "info": "6", "notice": "5", "warning": "4", "error": "3", "critical": "2",
            ]
        )
    }

    @Test(.timeLimit(.minutes(1))) func recordsTheErrorOfALogCall() async throws {
        try Journald.ensureRunning()
        let marker = UUID().uuidString
        let writer = JournalWriter()
        var logger = Logger(label: "errorbus.test.error") { JournalLogHandler(label: $0, writer: writer) }
        logger[metadataKey: "ERRORBUS_TEST_MARKER"] = "\(marker)"
        logger.error("upload failed", error: Upload())

        let entries = try await Journalctl.entries(["ERRORBUS_TEST_MARKER=\(marker)"], atLeast: 1)
        try #require(entries.count == 1)
        #expect(entries[0]["ERROR_MESSAGE"] == "upload of job 7 failed")
        #expect(entries[0]["ERROR_TYPE"] == String(reflecting: Upload.self))
    }

    /// The helper logs with the journal socket hidden by an empty tmpfs in a private mount
    /// namespace (libsystemd drops such entries without an error), then with a socket file
    /// nobody listens on (`ECONNREFUSED`), then with the tmpfs unmounted.
    @Test(.timeLimit(.minutes(1))) func fallsBackToStandardErrorWhileTheJournalIsUnreachable() async throws {
        try Journald.ensureRunning()
        let marker = UUID().uuidString
        let run = try await ChildProcess.run(
            "/usr/bin/unshare",
            [
                "--mount", "--propagation", "private", "/bin/sh", "-c",
                "mount -t tmpfs -o size=1m,mode=0755 tmpfs /run/systemd/journal && exec \"$0\" journal-outage \"$1\"",
                TestHelper.path, marker,
            ]
        )
        try #require(run.status == 0, "\(run.standardError)")
        #expect(
            Array(run.outputLines.dropFirst()) == [
                "reachable after missing socket: false",
                "reachable after stale socket: false",
                "reachable after unmount: true",
            ]
        )

        let errorLines = run.errorLines
        try #require(errorLines.count == 4, "\(run.standardError)")
        #expect(errorLines[0].contains("warning journal unreachable at /run/systemd/journal/socket (access: "))
        #expect(errorLines[1].hasSuffix("error outage: no socket ERRORBUS_TEST_MARKER=\(marker)"))
        #expect(errorLines[2].hasSuffix("error outage: connection refused ERRORBUS_TEST_MARKER=\(marker)"))
        #expect(errorLines[3].hasSuffix("notice journal reachable again; 2 log entries were written to standard error meanwhile"))

        let inJournal = try await Journalctl.entries(["ERRORBUS_TEST_MARKER=\(marker)"], atLeast: 1)
        #expect(inJournal.map { $0["MESSAGE"] } == ["back in the journal"])

        let pid = try #require(run.outputLines.first.flatMap { $0.hasPrefix("pid ") ? $0.dropFirst(4) : nil })
        let notices = try await Journalctl.entries(["_PID=\(pid)", "LOGGER=JournalWriter"], atLeast: 1)
        try #require(notices.count == 1)
        #expect(notices[0]["JOURNAL_WRITER_DIVERTED_ENTRIES"] == "2")
        #expect(notices[0]["PRIORITY"] == "5")
    }
}

/// A stream standing in for standard error, to see what a ``JournalWriter`` writes to its
/// fallback. A socket pair rather than a pipe, to get `SOCK_CLOEXEC` atomically.
final class FallbackCapture: Sendable {
    let readEnd: CInt
    let writeEnd: CInt

    init() throws {
        var ends: [CInt] = [-1, -1]
        guard socketpair(AF_UNIX, CInt(SOCK_STREAM.rawValue) | CInt(SOCK_CLOEXEC.rawValue), 0, &ends) == 0 else {
            throw TestSocketError.call("socketpair", errno)
        }
        self.readEnd = ends[0]
        self.writeEnd = ends[1]
    }

    deinit {
        close(self.readEnd)
        close(self.writeEnd)
    }

    /// What was written so far.
    func captured() throws -> String {
        var bytes: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        while true {
            let count = recv(self.readEnd, &buffer, buffer.count, CInt(MSG_DONTWAIT))
            if count > 0 {
                bytes.append(contentsOf: buffer[..<count])
            } else if count < 0 && errno != EAGAIN {
                throw TestSocketError.call("read", errno)
            } else {
                return String(decoding: bytes, as: UTF8.self)
            }
        }
    }
}
