import CFileIO
import ErrorBusSupport
#if canImport(Glibc)
import Glibc
#endif
import NIOCore
import NIOPosix

/// Reads an outbox file of at most one chunk whole.
///
/// A file the sync service queued moments ago is still in the kernel's caches: its path in the
/// lookup cache, its pages in the page cache. It is then read on the calling thread, with calls
/// that cannot wait for a disk or a server (`openat2` with `RESOLVE_CACHED`, `preadv2` with
/// `RWF_NOWAIT`), because the hop to the blocking-I/O pool and back costs more than the read
/// (BENCHMARKS.md). Anything else (pages evicted from a long queue, an NFS outbox that
/// revalidates, a kernel older than 5.12) is read on the pool, where no cooperative thread
/// waits for it.
///
/// Files are opened with `O_NONBLOCK`, which changes nothing for a regular file: a FIFO put in
/// a file's place would otherwise hold the thread that opens it until a writer came.
enum OutboxFileReader {
    /// At most `capacity` bytes of the file, read from the caches when they hold it all, else
    /// on the blocking-I/O pool.
    static func contents(of path: String, capacity: Int) async throws -> ByteBuffer {
        try await read(path, capacity: capacity).bytes
    }

    /// What was read of a file: its bytes, and its status while they were read.
    struct Read: Sendable {
        var bytes: ByteBuffer
        /// The file's status before the bytes were read, if it was the same after; if the file
        /// changed meanwhile, its status before, which the file no longer has.
        var status: FileStatus

        init(bytes: ByteBuffer, before: FileStatus, after: FileStatus) {
            self.bytes = bytes
            self.status = after.isSameContent(as: before) ? after : before
        }
    }

    /// As ``contents(of:capacity:)``, with the file's status once its bytes were read.
    static func read(_ path: String, capacity: Int) async throws -> Read {
        if let cached = cachedRead(path, capacity: capacity) { return cached }
        return try await NIOThreadPool.singleton.runIfActive { () throws(SystemCallError) -> Read in
            let descriptor = try open(path)
            defer { try? SystemCall.close(descriptor) }
            let before = try FileStatus.of(descriptor: descriptor, path: path)
            // read(2), not pread(2): what is not a regular file any more (a FIFO put in the
            // file's place) reads as empty, a changed file, rather than failing with ESPIPE.
            let bytes = try readAll(descriptor, path: path, capacity: capacity) { descriptor, free, _ in
                Glibc.read(descriptor, free.baseAddress, free.count)
            }
            return Read(bytes: bytes, before: before, after: try FileStatus.of(descriptor: descriptor, path: path))
        }
    }

    /// Opens an outbox file for reading, with `O_NONBLOCK` (above). May wait for a disk or a
    /// server: call it on the I/O pool.
    static func open(_ path: String) throws(SystemCallError) -> CInt {
        try SystemCall.check("open", path: path) { Glibc.open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK) }
    }

    /// At most `capacity` bytes of the file if the kernel has its path and every page of it in
    /// its caches; `nil` when reading it would wait (or fails: the pool's read says why).
    static func cachedContents(of path: String, capacity: Int) -> ByteBuffer? {
        cachedRead(path, capacity: capacity)?.bytes
    }

    private static func cachedRead(_ path: String, capacity: Int) -> Read? {
        let descriptor = errorbus_open_cached(path)
        guard descriptor >= 0 else { return nil }
        defer { try? SystemCall.close(descriptor) }
        guard
            let before = try? FileStatus.of(descriptor: descriptor, path: path),
            let bytes = try? readAll(descriptor, path: path, capacity: capacity, { descriptor, free, offset in
                errorbus_read_cached(descriptor, free.baseAddress, free.count, offset)
            }),
            let after = try? FileStatus.of(descriptor: descriptor, path: path)
        else { return nil }
        return Read(bytes: bytes, before: before, after: after)
    }

    /// Reads from `descriptor` until the end of the file or `capacity` bytes.
    private static func readAll(
        _ descriptor: CInt,
        path: String,
        capacity: Int,
        _ read: (CInt, UnsafeMutableRawBufferPointer, off_t) -> Int
    ) throws(SystemCallError) -> ByteBuffer {
        // The allocator rounds the capacity up: each read asks for what is left of it only.
        var buffer = ByteBufferAllocator().buffer(capacity: capacity)
        while buffer.readableBytes < capacity {
            let (offset, wanted) = (buffer.readableBytes, capacity - buffer.readableBytes)
            let count = try buffer.writeWithUnsafeMutableBytes(minimumWritableBytes: wanted) { (free) throws(SystemCallError) -> Int in
                try SystemCall.check("read", path: path) {
                    read(descriptor, UnsafeMutableRawBufferPointer(rebasing: free.prefix(wanted)), off_t(offset))
                }
            }
            if count == 0 { break }
        }
        return buffer
    }
}
