import Crypto
import Foundation
import ErrorBusStore
import ErrorBusSupport
#if canImport(Glibc)
import Glibc
#endif
import NIOCore
import NIOPosix

/// Looks at an entry of the outbox and decides whether it is a file ready to upload, computing
/// its idempotency key from its content.
struct OutboxInspector: Sendable {
    let directory: String
    let maxFileSize: Int64
    /// A file found by a rescan (rather than announced by inotify) must have been left alone this
    /// long, so that one still being written in place is not taken half-done.
    let settleTime: Duration

    /// What an outbox entry turned out to be.
    enum Verdict: Sendable, Equatable {
        /// A complete regular file, with its size and content key.
        case ready(size: Int64, key: String)
        /// The same size and modification time as when it was last taken care of: not hashed
        /// again.
        case unchanged
        /// A dot-file: writers use hidden names while they write, then rename.
        case hidden
        /// Not a regular file (a directory, a socket, a link…).
        case notRegularFile
        /// Larger than the configured limit.
        case tooLarge(size: Int64)
        /// Modified too recently to be sure it is complete; looked at again once the settle time
        /// has passed.
        case unsettled
        /// Gone before it could be read.
        case vanished
        /// Could not be looked at or read.
        case unreadable(SystemCallError)
    }

    /// One outbox entry, what it turned out to be, and its stamp when it was looked at.
    struct Inspection: Sendable, Equatable {
        let name: String
        let stamp: FileStamp?
        let verdict: Verdict

        var path: String { "" }
    }

    /// Inspects `names` in one job on NIO's blocking-I/O thread pool, off the cooperative
    /// executor. A name whose stamp is the one in `known` is ``Verdict/unchanged``. `announced`
    /// is true when inotify reported the files complete (renamed in or closed after writing),
    /// false when a rescan found them.
    func inspect(_ names: [String], known: [String: FileStamp], announced: Bool) async throws -> [Inspection] {
        try await NIOThreadPool.singleton.runIfActive {
            names.map { name in inspect(name, known: known[name], announced: announced) }
        }
    }

    func inspect(_ name: String, known: FileStamp?, announced: Bool) -> Inspection {
        if name.hasPrefix(".") { return Inspection(name: name, stamp: nil, verdict: .hidden) }
        let path = directory + "/" + name
        let info: FileStatus
        do {
            guard let found = try FileStatus.ofLink(path) else { return Inspection(name: name, stamp: nil, verdict: .vanished) }
            info = found
        } catch {
            return Inspection(name: name, stamp: nil, verdict: .unreadable(error))
        }
        let stamp = FileStamp(info)
        return Inspection(name: name, stamp: stamp, verdict: stamp == known ? .unchanged : verdict(path, info, announced: announced))
    }

    private func verdict(_ path: String, _ info: FileStatus, announced: Bool) -> Verdict {
        guard info.isRegularFile else { return .notRegularFile }
        let size = info.size
        guard size <= maxFileSize else { return .tooLarge(size: size) }
        if !announced {
            guard info.age >= settleTime else { return .unsettled }
        }
        do {
            return .ready(size: size, key: try ContentKey.of(fileAt: path))
        } catch where error.errnoCode == ENOENT {
            return .vanished
        } catch {
            return .unreadable(error)
        }
    }

    /// The names in the outbox directory, visible or not, in no particular order, read a slice
    /// at a time.
    func listing() throws(SystemCallError) -> OutboxListing {
        try OutboxListing(directory: directory)
    }
}

/// A walk of a directory's entries, a slice at a time: listing a million files holds one slice
/// in memory. Used by one task at a time.
final class OutboxListing {
    private let stream: OpaquePointer
    private let directory: String

    init(directory: String) throws(SystemCallError) {
        guard let stream = opendir(directory) else { throw SystemCallError(call: "opendir", errnoCode: errno, path: directory) }
        self.stream = stream
        self.directory = directory
    }

    deinit {
        closedir(stream)
    }

    /// The next names, up to `count`, `.` and `..` left out; none once the walk is over.
    func next(_ count: Int) throws(SystemCallError) -> [String] {
        var names: [String] = []
        names.reserveCapacity(count)
        while names.count < count {
            errno = 0
            guard let entry = readdir(stream) else {
                guard errno == 0 else { throw SystemCallError(call: "readdir", errnoCode: errno, path: directory) }
                break
            }
            let name = withUnsafeBytes(of: entry.pointee.d_name) { raw in
                String(decoding: raw.prefix { $0 != 0 }, as: UTF8.self)
            }
            if name != "." && name != ".." { names.append(name) }
        }
        return names
    }

    /// Every name left, at once: for small directories and tests.
    func all() throws(SystemCallError) -> [String] {
        var names: [String] = []
        while case let slice = try next(4_096), !slice.isEmpty { names += slice }
        return names
    }
}

/// A file's idempotency key: the hex SHA-256 of its content, so the same content dropped twice
/// is one item for the API.
enum ContentKey {
    /// Hashes the file with plain `read(2)` calls: blocking, for the I/O thread pool.
    static func of(fileAt path: String) throws(SystemCallError) -> String {
        hex(of: try hash(fileAt: path))
    }

    /// The hex SHA-256 of bytes read whole.
    static func of(_ bytes: ByteBuffer) -> String {
        hex(of: bytes.withUnsafeReadableBytes { SHA256.hash(data: $0) })
    }

    /// The key of a file for an API that tells files by name: the hex SHA-256 of its content's
    /// key and its name, so that one content under two names is two jobs, and the same content
    /// under the same name one.
    static func of(_ contentKey: String, name: String) -> String {
        hex(of: SHA256.hash(data: Array((contentKey + "/" + name).utf8)))
    }

    /// Lowercase hex.
    static func hex(of digest: SHA256.Digest) -> String {
        LowercaseHex.string(digest, count: SHA256.byteCount)
    }

    private static func hash(fileAt path: String) throws(SystemCallError) -> SHA256.Digest {
        let descriptor = try OutboxFileReader.open(path)
        defer { close(descriptor) }
        var hasher = SHA256()
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 64 * 1024, alignment: 16)
        defer { buffer.deallocate() }
        while true {
            let count = try SystemCall.check("read", path: path) { read(descriptor, buffer.baseAddress, buffer.count) }
            if count == 0 { return hasher.finalize() }
            hasher.update(bufferPointer: UnsafeRawBufferPointer(rebasing: buffer[..<count]))
        }
    }
}

/// An outbox entry's size and modification time, to tell whether it changed since it was seen.
struct FileStamp: Equatable, Sendable {
    let size: Int64
    let modifiedSeconds: Int
    let modifiedNanoseconds: Int

    init(_ info: FileStatus) {
        size = info.size
        modifiedSeconds = info.modifiedSeconds
        modifiedNanoseconds = info.modifiedNanoseconds
    }

    /// The stamp the store recorded with a job, if it recorded its time.
    init?(_ known: KnownFile) {
        guard let nanoseconds = known.modifiedNanoseconds else { return nil }
        size = known.size
        (modifiedSeconds, modifiedNanoseconds) = (Int(nanoseconds / 1_000_000_000), Int(nanoseconds % 1_000_000_000))
    }

    /// When the file was last written, in nanoseconds since the epoch: what the store records.
    var modifiedSinceEpoch: Int64 {
        Int64(modifiedSeconds) * 1_000_000_000 + Int64(modifiedNanoseconds)
    }
}
