import Crypto
import ErrorBusControl
import Foundation
import Glibc
import TestSupport
import Testing
import Varlink
@testable import Sandbox

/// Producers that write their files in place, as real processes beside a real errorbusd and the
/// sandbox: one that keeps its file open between lines, one that appends a line at a time with
/// `>>`, one that writes while the upload is under way. Every line must reach the API, once, and
/// no file may be removed while it holds what was not sent. Every wait is for something a process
/// does (its exit, a log line, a file leaving the outbox); none is a sleep.
@Suite("Integration: producers that write in place", .serialized, .timeLimit(.minutes(3)))
struct WriterIntegrationTests {
    static func sha256(_ text: String) -> String {
        SHA256.hash(data: Data(text.utf8)).map { String(format: "%02x", $0) }.joined()
    }

    /// `count` numbered lines, as the writers below write them.
    static func lines(_ count: Int) -> String {
        (1...count).map { "line \($0)\n" }.joined()
    }

    /// A shell that writes `count` lines to `path`, one every 200 ms: `script` is the loop's
    /// writing command (`$1` the path, `$i` the line's number).
    static func writer(_ path: String, count: Int, opening: String = "", writing command: String) throws -> ChildProcess {
        try ChildProcess("/bin/sh", ["-c", "\(opening) i=1; while [ $i -le \(count) ]; do \(command); i=$((i+1)); sleep 0.2; done", "sh", path])
    }

    /// Runs `body` with a sandbox and a started daemon (`api`: lines under `api:`), and stops both.
    static func withDaemon(
        api: String = "",
        environment: [String: String] = [:],
        _ body: (SandboxProcess, DaemonProcess) async throws -> Void
    ) async throws {
        let scratch = try ScratchDirectory("writers")
        let sandbox = try await SandboxProcess(in: scratch)
        let daemon = try DaemonProcess(
            in: scratch, baseURL: sandbox.baseURL, api: api, credentials: ["client-secret": sandbox.clientSecret], environment: environment
        )
        do {
            try await daemon.start()
            try await body(sandbox, daemon)
            let finished = try await daemon.stop()
            #expect(finished.status == 0, "errorbusd exited with \(finished.status):\n\(finished.standardError)")
        } catch {
            _ = try? await daemon.kill()
            try? await sandbox.stop()
            throw error
        }
        try await sandbox.stop()
    }

    @Test func aFileItsWriterKeepsOpenIsTakenWholeOnceItIsClosed() async throws {
        // A settle time far shorter than the writer's pauses: without a lease, a rescan (every
        // second) finds the file still a while after each line and takes it half-written.
        try await Self.withDaemon(environment: ["ERRORBUSD_SYNC_SETTLE_TIME": "50ms"]) { sandbox, daemon in
            let path = daemon.outbox + "/held-open.log"
            let writer = try Self.writer(path, count: 15, opening: "exec 3>\"$1\";", writing: "echo \"line $i\" >&3")
            #expect(await writer.waitForExit().status == 0)
            try await DirectoryWatcher.wait(for: daemon.outbox) { $0.isEmpty }
            // One item, every line in it, in order: nothing went into a removed file.
            let items = try await sandbox.items()
            #expect(items.keys.sorted() == [Self.sha256(Self.lines(15))], "\(items.values.map { "\($0.bytes) bytes" })")
            #expect(try await sandbox.stats().items.uploads == 1)
        }
    }

    @Test func aFileAppendedLineByLineIsTakenWholeOnceItsWriterStops() async throws {
        // An API that tells files by name keeps the last upload of a name: each line taken alone
        // (and the file removed between two lines) would leave it only the last.
        let byName = """
              upload:
                url: /v1/items/{name}
            """
        try await Self.withDaemon(api: byName, environment: ["ERRORBUSD_SYNC_SETTLE_TIME": "2s"]) { sandbox, daemon in
            let writer = try Self.writer(daemon.outbox + "/appended.log", count: 15, writing: "echo \"line $i\" >> \"$1\"")
            #expect(await writer.waitForExit().status == 0)
            try await DirectoryWatcher.wait(for: daemon.outbox) { $0.isEmpty }
            let item = try #require(try await sandbox.items()["appended.log"])
            #expect(item.sha256 == Self.sha256(Self.lines(15)), "\(item.bytes) bytes of \(Self.lines(15).utf8.count)")
            #expect(item.versions == 1)
        }
    }

    @Test func aFileWrittenAfterItsBytesWereReadStaysAndItsNewContentGoesToo() async throws {
        try await Self.withDaemon { sandbox, daemon in
            // Each upload is answered a second late: the file is written while its upload waits.
            try await sandbox.fault(#"{"route":"items","mode":"slow","delayMs":1000}"#)
            try daemon.drop("report.log", content: Data("first\n".utf8))
            // The sandbox has the request, so errorbusd has read what it sent.
            #expect(await sandbox.process.standardError.wait(for: "sandbox.route=items"))
            let appender = try FileHandle(forWritingTo: URL(fileURLWithPath: daemon.outbox + "/report.log"))
            try appender.seekToEnd()
            try appender.write(contentsOf: Data("second\n".utf8))
            try appender.close()
            try await DirectoryWatcher.wait(for: daemon.outbox) { $0.isEmpty }
            let items = try await sandbox.items()
            #expect(Set(items.keys) == [Self.sha256("first\n"), Self.sha256("first\nsecond\n")])
            // Said once, with what changed.
            let told = daemon.log.components(separatedBy: "report.log changed after it was read for its upload").count - 1
            #expect(told == 1, "\(daemon.log)")
        }
    }

    @Test func aFileDroppedAgainAfterTheAPIsConsumerTookItIsUploadedAgainByName() async throws {
        let byName = """
              upload:
                url: /v1/items/{name}
            """
        try await Self.withDaemon(api: byName) { sandbox, daemon in
            try daemon.drop("daily.csv", content: Data("a,b\n1,2\n".utf8))
            try await DirectoryWatcher.wait(for: daemon.outbox) { $0.isEmpty }
            #expect(try await sandbox.items()["daily.csv"] != nil)
            // The API's consumer took it; the producer drops the same bytes under the same name.
            try await sandbox.reset()
            try daemon.drop("daily.csv", content: Data("a,b\n1,2\n".utf8))
            try await DirectoryWatcher.wait(for: daemon.outbox) { $0.isEmpty }
            #expect(try await sandbox.items()["daily.csv"]?.sha256 == Self.sha256("a,b\n1,2\n"))
            #expect(daemon.log.contains("daily.csv was dropped again after its delivery with the same content"), "\(daemon.log)")
        }
    }

    @Test(.timeLimit(.minutes(1))) func entriesErrorbusdWillNotSendAreToldOnceEachAndListed() async throws {
        try await Self.withDaemon { sandbox, daemon in
            #expect(mkdir(daemon.outbox + "/a-directory", 0o755) == 0)
            #expect(symlink("/etc/hostname", daemon.outbox + "/a-link") == 0)
            #expect(mkfifo(daemon.outbox + "/a-fifo", 0o644) == 0)
            // A regular file whose name is not UTF-8 (0xFF is never part of it).
            let name: [UInt8] = Array("latin1-".utf8) + [0xFF] + Array(".txt".utf8)
            try Self.createFile(named: name, in: daemon.outbox, content: "not sent\n")
            try await daemon.waitForLog("a-directory in the outbox is not uploaded: it is a directory")
            try await daemon.waitForLog("a-link in the outbox is not uploaded: it is a symbolic link")
            try await daemon.waitForLog("a-fifo in the outbox is not uploaded: it is a FIFO")
            try await daemon.waitForLog("latin1-\\xFF.txt in the outbox is not uploaded: its name is not valid UTF-8")

            // Two more rescans (every second) find them again: a hard link makes an entry no
            // inotify event announces, which only a rescan takes.
            for number in 1...2 {
                let elsewhere = daemon.root + "/linked-\(number).txt"
                try Data("linked \(number)\n".utf8).write(to: URL(fileURLWithPath: elsewhere))
                #expect(link(elsewhere, daemon.outbox + "/linked-\(number).txt") == 0)
                try await DirectoryWatcher.wait(for: daemon.outbox) { !$0.contains("linked-\(number).txt") }
            }
            for told in ["a-directory in the outbox", "a-link in the outbox", "a-fifo in the outbox", "latin1-\\xFF.txt in the outbox"] {
                #expect(daemon.log.components(separatedBy: told).count - 1 == 1, "\(told):\n\(daemon.log)")
            }
            let status = try await ControlIntegrationTests.varlink(daemon) { try await $0.call(Control.getStatus) }
            #expect(Set(status.unreadableFiles.map(\.file)) == ["a-directory", "a-link", "a-fifo", "latin1-\\xFF.txt"])
            #expect(try await sandbox.items().count == 2)
        }
    }

    @Test func withoutLeasesErrorbusdSaysSoOnceAndDeliversAsBefore() async throws {
        let scratch = try ScratchDirectory("no-lease")
        let sandbox = try await SandboxProcess(in: scratch)
        let daemon = try DaemonProcess(in: scratch, sandbox: sandbox)
        // As root without CAP_LEASE: the kernel grants a lease on the files errorbusd owns only.
        let child = try daemon.launch(prefix: ["/usr/bin/setpriv", "--bounding-set=-lease", "--"])
        #expect(await child.waitForStandardError(containing: "errorbusd ready"), "\(child.standardError.text)")
        for number in 1...3 {
            // A producer's file: owned by another user, readable by errorbusd.
            let hidden = daemon.outbox + "/.report-\(number).part"
            try Data("report \(number)\n".utf8).write(to: URL(fileURLWithPath: hidden))
            #expect(chown(hidden, 65534, 65534) == 0 && chmod(hidden, 0o644) == 0)
            #expect(rename(hidden, daemon.outbox + "/report-\(number).txt") == 0)
        }
        try await DirectoryWatcher.wait(for: daemon.outbox) { $0.isEmpty }
        #expect(try await sandbox.items().count == 3)
        // Said once, not per file read or removed.
        let told = daemon.log.components(separatedBy: "cannot take a read lease on outbox files").count - 1
        #expect(told == 1, "\(daemon.log)")
        #expect(daemon.log.contains("Permission denied"), "\(daemon.log)")
        #expect(try await daemon.stop().status == 0)
        try await sandbox.stop()
    }

    /// Creates a file whose name is raw bytes (not necessarily UTF-8).
    static func createFile(named name: [UInt8], in directory: String, content: String) throws {
        let path = Array(directory.utf8) + [UInt8(ascii: "/")] + name + [0]
        let descriptor = path.withUnsafeBufferPointer { bytes in
            bytes.withMemoryRebound(to: CChar.self) { open($0.baseAddress!, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644) }
        }
        guard descriptor >= 0 else { throw ChildProcessError(description: "open: errno \(errno)") }
        defer { close(descriptor) }
        let bytes = Array(content.utf8)
        guard write(descriptor, bytes, bytes.count) == bytes.count else { throw ChildProcessError(description: "write: errno \(errno)") }
    }
}
