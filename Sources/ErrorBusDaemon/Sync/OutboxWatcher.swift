import ErrorBusSupport
#if canImport(Glibc)
import Glibc
#endif
import Logging
import NIOCore
import NIOPosix

/// Tells the sync service when files arrive in the outbox, with inotify.
///
/// A file counts as arrived complete when it is renamed into the directory (`IN_MOVED_TO`, how a
/// writer publishes a finished file). A writer that closes a file it wrote in place
/// (`IN_CLOSE_WRITE`) may not be done with it (`echo … >>file` closes it after every line): such a
/// file is reported as written, to be taken once it has settled. A change of a file's permissions or owner (`IN_ATTRIB`) is reported too:
/// a file errorbusd could not read may have become readable. Events the kernel dropped
/// (`IN_Q_OVERFLOW`) are reported as such, so the caller rescans. The inotify descriptor is read as a NIO pipe channel: no thread blocks on it.
struct OutboxWatcher: Sendable {
    /// What the watcher saw.
    enum Signal: Sendable, Equatable {
        /// These names were renamed in (in the order their events came), these closed after
        /// writing in place, and these had their permissions or owner changed.
        case arrived(renamed: [String], written: [String], changed: [String])
        /// The kernel dropped events: rescan the directory.
        case overflow
    }

    let directory: String
    let logger: Logger

    /// Watches until the task is cancelled, handing each batch of events to `handle`.
    func run(_ handle: (Signal) async -> Void) async throws {
        let descriptor = try SystemCall.check("inotify_init1") { inotify_init1(CInt(IN_NONBLOCK | IN_CLOEXEC)) }
        do {
            let mask = UInt32(IN_MOVED_TO) | UInt32(IN_CLOSE_WRITE) | UInt32(IN_ATTRIB) | UInt32(IN_ONLYDIR)
            try SystemCall.check("inotify_add_watch", path: directory) { inotify_add_watch(descriptor, directory, mask) }
        } catch {
            try? SystemCall.close(descriptor)
            throw error
        }
        // The channel owns the descriptor from here on and closes it.
        let channel = try await NIOPipeBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .channelOption(.recvAllocator, value: FixedSizeRecvByteBufferAllocator(capacity: 64 * 1024))
            .takingOwnershipOfDescriptor(input: descriptor) { channel in
                channel.eventLoop.makeCompletedFuture {
                    try NIOAsyncChannel<ByteBuffer, Never>(wrappingChannelSynchronously: channel)
                }
            }
        try await channel.executeThenClose { inbound in
            try await withTaskCancellationHandler {
                for try await buffer in inbound {
                    await handle(Self.parse(buffer))
                }
            } onCancel: {
                channel.channel.close(promise: nil)
            }
        }
    }

    /// Decodes a read's worth of `struct inotify_event` records. The kernel only ever returns
    /// whole records, and the fixed 64 KiB receive buffer holds any record.
    static func parse(_ buffer: ByteBuffer) -> Signal {
        var buffer = buffer
        var renamed: [String] = []
        var written: [String] = []
        var changed: [String] = []
        let headerSize = MemoryLayout<inotify_event>.size
        while buffer.readableBytes >= headerSize {
            guard
                let _ = buffer.readInteger(endianness: .host, as: Int32.self),  // wd
                let mask = buffer.readInteger(endianness: .host, as: UInt32.self),
                let _ = buffer.readInteger(endianness: .host, as: UInt32.self),  // cookie
                let length = buffer.readInteger(endianness: .host, as: UInt32.self),
                let nameBytes = buffer.readBytes(length: Int(length))
            else { break }
            if mask & UInt32(IN_Q_OVERFLOW) != 0 { return .overflow }
            // The name is NUL-padded to an alignment boundary.
            let name = String(decoding: nameBytes.prefix { $0 != 0 }, as: UTF8.self)
            guard !name.isEmpty else { continue }
            if mask & UInt32(IN_MOVED_TO) != 0 {
                renamed.append(name)
            } else if mask & UInt32(IN_CLOSE_WRITE) != 0 {
                written.append(name)
            } else {
                changed.append(name)
            }
        }
        return .arrived(renamed: renamed, written: written, changed: changed)
    }
}
