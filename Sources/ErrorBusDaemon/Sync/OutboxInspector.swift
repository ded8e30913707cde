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
    /// A file written in place (found by a rescan, or closed by its writer, rather than renamed
    /// in) must have been left alone this long, so that one still being written is not taken
    /// half-done.
    let settleTime: Duration
    /// Read leases, which tell a file that a process still has open for writing; `nil`: none
    /// asked for.
    var leases: WriterLeases? = nil

    /// What an outbox entry turned out to be.
    enum Verdict: Sendable, Equatable {
        /// A complete regular file, with its size and content key.
        case ready(size: Int64, key: String)
        /// The same size and modification time as when it was last taken care of: not hashed
        /// again.
        case unchanged
        /// A dot-file: writers use hidden names while they write, then rename.
        case hidden
        /// Not a regular file: what it is instead ("a directory", "a symbolic link", "a FIFO"…).
        case notRegularFile(String)
        /// Larger than the configured limit.
        case tooLarge(size: Int64)
        /// Modified too recently to be sure it is complete, or changed while it was read; looked
        /// at again once the settle time has passed.
        case unsettled
        /// A process has it open for writing (its read lease was refused, or broken while it was
        /// hashed): looked at again once the settle time has passed, or when the writer closes it.
        case beingWritten
        /// Gone before it could be read.
        case vanished
        /// Could not be looked at or read.
        case unreadable(SystemCallError)

        /// Whether the entry is left to be looked at again after the settle time.
        var isUnsettled: Bool { self == .unsettled || self == .beingWritten }
    }

    /// One outbox entry, what it turned out to be, and its stamp when it was looked at.
    struct Inspection: Sendable, Equatable {
        let name: String
        let stamp: FileStamp?
        let verdict: Verdict
        /// The status of the file whose bytes were hashed, taken once they were read (a
        /// ``Verdict/ready(size:key:)`` file's): a delivered file is removed only while it still
        /// has this inode, size and modification time.
        var read: FileStatus? = nil
    }

    /// Inspects `names` in one job on NIO's blocking-I/O thread pool, off the cooperative
    /// executor. A name whose stamp is the one in `known` is ``Verdict/unchanged``. `announced`
    /// is true when inotify reported the files renamed into the outbox (complete), false when a
    /// rescan found them or their writer closed them after writing in place.
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
        guard stamp != known else { return Inspection(name: name, stamp: stamp, verdict: .unchanged) }
        let (verdict, read) = verdict(path, info, announced: announced)
        return Inspection(name: name, stamp: stamp, verdict: verdict, read: read)
    }

    private func verdict(_ path: String, _ info: FileStatus, announced: Bool) -> (Verdict, FileStatus?) {
        guard info.isRegularFile else { return (.notRegularFile(info.otherType ?? "not a regular file"), nil) }
        let size = info.size
        guard size <= maxFileSize else { return (.tooLarge(size: size), nil) }
        if !announced {
            guard info.age >= settleTime else { return (.unsettled, nil) }
        }
        do {
            switch try ContentKey.of(fileAt: path, leases: leases) {
            case .beingWritten:
                return (.beingWritten, nil)
            case .hashed(let key, let read):
                // Written while it was read: what was hashed may be half of it.
                guard read.isSameContent(as: info) else { return (.unsettled, nil) }
                return (.ready(size: size, key: key), read)
            }
        } catch where error.errnoCode == ENOENT {
            return (.vanished, nil)
        } catch {
            return (.unreadable(error), nil)
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
            let name = withUnsafeBytes(of: entry.pointee.d_name) { raw -> String? in
                let bytes = raw.prefix { $0 != 0 }
                guard let name = String(validating: bytes, as: UTF8.self) else {
                    // A name that is no text: it can be neither looked up again through a Swift
                    // string nor named to the API. Told, not taken.
                    undecodable.append(Self.escaped(bytes))
                    return nil
                }
                return name
            }
            if let name, name != "." && name != ".." { names.append(name) }
        }
        return names
    }

    /// The names walked so far that are not valid UTF-8, their other bytes written `\xFF`.
    private(set) var undecodable: [String] = []

    /// `bytes` as text, each byte that is not part of valid UTF-8 as `\xFF`.
    static func escaped(_ bytes: some Collection<UInt8>) -> String {
        let bytes = Array(bytes)
        var text = ""
        var start = 0
        next: while start < bytes.count {
            for length in 1...4 where start + length <= bytes.count {
                if let character = String(validating: bytes[start..<start + length], as: UTF8.self) {
                    text += character
                    start += length
                    continue next
                }
            }
            text += "\\x" + String(bytes[start], radix: 16, uppercase: true)
            start += 1
        }
        return text
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
    /// What hashing a file came to.
    enum Hashing: Sendable, Equatable {
        /// Its key, and its status once its bytes were read.
        case hashed(key: String, read: FileStatus)
        /// A process has it open for writing: not hashed (or not to the end).
        case beingWritten
    }

    /// Hashes the file with plain `read(2)` calls: blocking, for the I/O thread pool.
    static func of(fileAt path: String) throws(SystemCallError) -> String {
        switch try of(fileAt: path, leases: nil) {
        case .hashed(let key, _): key
        case .beingWritten: preconditionFailure("no lease was asked for")
        }
    }

    /// Hashes the file under a read lease from `leases` (where one can be had): a file a process
    /// has open for writing is not hashed, and a writer that opens it meanwhile waits at most for
    /// the next mebibyte, which ends the hash. Blocking, for the I/O thread pool.
    static func of(fileAt path: String, leases: WriterLeases?) throws(SystemCallError) -> Hashing {
        let descriptor = try OutboxFileReader.open(path)
        defer { close(descriptor) }
        var leased = false
        switch leases?.take(descriptor, path: path) {
        case .held: leased = true
        case .writerHasItOpen: return .beingWritten
        case .unavailable, nil: break
        }
        // Released before the descriptor is closed (defers run last first), and at once.
        defer { if leased { leases?.release(descriptor) } }
        var hasher = SHA256()
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 64 * 1024, alignment: 16)
        defer { buffer.deallocate() }
        var chunks = 0
        while true {
            let count = try SystemCall.check("read", path: path) { read(descriptor, buffer.baseAddress, buffer.count) }
            if count == 0 { break }
            hasher.update(bufferPointer: UnsafeRawBufferPointer(rebasing: buffer[..<count]))
            chunks += 1
            // A writer's open waits for the lease: it ends the hash within 16 chunks.
            if leased, chunks % 16 == 0, leases?.isBreaking(descriptor) == true { return .beingWritten }
        }
        if leased, leases?.isBreaking(descriptor) == true { return .beingWritten }
        return .hashed(key: hex(of: hasher.finalize()), read: try FileStatus.of(descriptor: descriptor, path: path))
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
