@testable import ErrorBusDaemon
import ErrorBusSupport
import Foundation
import Glibc
import Logging
import TestSupport
import Testing

/// Read leases on real files, with real writer processes: a file open for writing is not hashed,
/// and a writer that opens a file while errorbusd holds its lease goes on as soon as the lease is
/// released, not after the kernel's lease-break-time (45 s).
@Suite(.timeLimit(.minutes(1)))
struct WriterLeasesTests {
    static let leases = WriterLeases(logger: Logger(label: "leases") { _ in SwiftLogNoOpLogHandler() })

    @Test func aFileOpenForWritingIsNotHashedAndOnceClosedItIs() throws {
        let scratch = try ScratchDirectory("leases")
        let path = scratch.file("open.log")
        #expect(FileManager.default.createFile(atPath: path, contents: Data("a\n".utf8)))
        let writer = try FileHandle(forWritingTo: URL(fileURLWithPath: path))
        #expect(try ContentKey.of(fileAt: path, leases: Self.leases) == .beingWritten)
        try writer.close()
        // A child process another test is spawning holds a copy of every descriptor of this
        // process, the writer's too, from its fork until its exec closes them (O_CLOEXEC): the
        // kernel then refuses the lease, rightly. There is no event for that exec, so ask again,
        // a bounded number of times; a file still open for writing never gets one.
        var outcome = try ContentKey.of(fileAt: path, leases: Self.leases)
        for _ in 0..<200 where outcome == .beingWritten {
            usleep(10_000)
            outcome = try ContentKey.of(fileAt: path, leases: Self.leases)
        }
        guard case .hashed(let key, let read) = outcome else {
            Issue.record("a closed file was not hashed: \(outcome)")
            return
        }
        #expect(key == (try ContentKey.of(fileAt: path)))
        #expect(read.size == 2)
    }

    @Test func aWriterThatBreaksTheLeaseGoesOnOnceItIsReleased() async throws {
        let scratch = try ScratchDirectory("leases")
        let path = scratch.file("leased.log")
        #expect(FileManager.default.createFile(atPath: path, contents: Data("a\n".utf8)))
        let descriptor = open(path, O_RDONLY | O_CLOEXEC)
        try #require(descriptor >= 0)
        defer { close(descriptor) }
        // As above: a child another test is spawning may hold a copy of the descriptor that
        // wrote the file until its exec; ask again, a bounded number of times.
        var taken = Self.leases.take(descriptor, path: path)
        for _ in 0..<200 where taken == .writerHasItOpen {
            usleep(10_000)
            taken = Self.leases.take(descriptor, path: path)
        }
        try #require(taken == .held)
        // The writer's open waits for the lease; the holder sees the break. (The kernel tells it
        // with a signal only, which errorbusd ignores: it asks, as the hash does between chunks.)
        let began = ContinuousClock.now
        let writer = try ChildProcess("/bin/sh", ["-c", "echo b >> \"$1\"", "sh", path])
        while !Self.leases.isBreaking(descriptor) {
            try await Task.sleep(for: .milliseconds(1))
        }
        Self.leases.release(descriptor)
        #expect(await writer.waitForExit().status == 0)
        // Sooner than the kernel breaks a lease not released (`fs.lease-break-time`, 45 s): a
        // loaded machine's slow start of the writer counts, the kernel's own break would not fit.
        let breakTime = (try? String(contentsOfFile: "/proc/sys/fs/lease-break-time", encoding: .utf8))
            .flatMap { Int($0.trimmingCharacters(in: .whitespacesAndNewlines)) } ?? 45
        #expect(ContinuousClock.now - began < .seconds(breakTime))
        #expect(try String(contentsOfFile: path, encoding: .utf8) == "a\nb\n")
    }
}
