@testable import ErrorBusDaemon
import ErrorBusSupport
import Foundation
import Glibc
import NIOCore
import Synchronization
import Testing

/// Outbox files are read on the calling thread when the kernel's caches hold them, and on the
/// blocking-I/O pool when reading them would wait.
@Suite struct OutboxFileReaderTests {
    static let content = (0..<10_000).map { UInt8(truncatingIfNeeded: $0 &* 31) }

    /// A file just written is in the page cache: read without the pool.
    @Test func aFileInTheCachesIsReadOnTheCallingThread() throws {
        let scratch = try ScratchDirectory("reader")
        let path = try Self.write(Self.content, in: scratch)
        let read = try #require(OutboxFileReader.cachedContents(of: path, capacity: Self.content.count + 1))
        #expect(Array(read.readableBytesView) == Self.content)
    }

    /// Pages evicted from the page cache would mean waiting for the disk: the pool reads them.
    @Test func aFileOutOfThePageCacheIsLeftToThePool() async throws {
        let scratch = try ScratchDirectory("reader")
        let path = try Self.write(Self.content, in: scratch)
        try Self.evict(path)
        #expect(OutboxFileReader.cachedContents(of: path, capacity: Self.content.count + 1) == nil)
        let read = try await OutboxFileReader.contents(of: path, capacity: Self.content.count + 1)
        #expect(Array(read.readableBytesView) == Self.content)
    }

    /// Never more than asked for, whichever way it is read: the caller tells a file that grew
    /// from the one byte more it asks for.
    @Test func readingStopsAtTheCapacity() async throws {
        let scratch = try ScratchDirectory("reader")
        let path = try Self.write(Self.content, in: scratch)
        #expect(OutboxFileReader.cachedContents(of: path, capacity: 100)?.readableBytes == 100)
        try Self.evict(path)
        #expect(try await OutboxFileReader.contents(of: path, capacity: 100).readableBytes == 100)
    }

    @Test func aMissingFileIsReportedWithItsErrno() async throws {
        let scratch = try ScratchDirectory("reader")
        let error = await #expect(throws: SystemCallError.self) {
            try await OutboxFileReader.contents(of: scratch.file("missing.bin"), capacity: 10)
        }
        #expect(error?.errnoCode == ENOENT)
        #expect(error?.path == scratch.file("missing.bin"))
    }

    /// A FIFO put in a file's place after it was queued: reading it, or hashing it, answers at
    /// once, empty (the uploader then sees a file that changed), instead of waiting for a
    /// writer. Should an open wait after all, a writer comes and goes every second from 10 s on
    /// (each open that waits needs one), so that the test fails rather than hangs.
    @Test func aFIFOInAFilesPlaceDoesNotHoldTheThread() async throws {
        let scratch = try ScratchDirectory("reader")
        let path = scratch.file("item.bin")
        try #require(mkfifo(path, 0o600) == 0)
        let rescued = Mutex(false)
        let rescue = DispatchSource.makeTimerSource(queue: .global())
        rescue.setEventHandler {
            rescued.withLock { $0 = true }
            let descriptor = open(path, O_WRONLY | O_NONBLOCK | O_CLOEXEC)
            if descriptor >= 0 { close(descriptor) }
        }
        rescue.schedule(deadline: .now() + 10, repeating: 1)
        rescue.resume()
        defer { rescue.cancel() }

        let read = try await OutboxFileReader.contents(of: path, capacity: 10)
        let key = try ContentKey.of(fileAt: path)
        #expect(!rescued.withLock { $0 }, "an open waited for a writer")
        #expect(read.readableBytes == 0)
        #expect(key == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855", "the SHA-256 of nothing")
    }

    static func write(_ content: [UInt8], in scratch: borrowing ScratchDirectory) throws -> String {
        let path = scratch.file("item.bin")
        try Data(content).write(to: URL(fileURLWithPath: path))
        return path
    }

    /// Synced, then `POSIX_FADV_DONTNEED`: the file's clean pages leave the page cache.
    static func evict(_ path: String) throws {
        let descriptor = open(path, O_RDONLY | O_CLOEXEC)
        try #require(descriptor >= 0)
        defer { close(descriptor) }
        try #require(fsync(descriptor) == 0)
        try #require(posix_fadvise(descriptor, 0, 0, POSIX_FADV_DONTNEED) == 0)
    }
}
