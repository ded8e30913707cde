import Synchronization

/// Sends the replies of a streaming method before its last one.
///
/// A streaming handler (``VarlinkRouter/implementStreaming(_:handler:)``) calls ``send(_:)`` for
/// every reply but the last, which it returns. ``send(_:)`` waits while the client is not reading
/// (the connection's outbound buffer is full), so a slow client slows the handler down instead of
/// growing memory; a client that stops reading altogether is disconnected after the server's
/// `writeTimeout`, and then ``send(_:)`` throws.
public struct VarlinkReplyWriter<Reply: Encodable & Sendable>: Sendable {
    /// ``VarlinkReplyWriter/send(_:)`` was called after the handler had returned.
    public struct CallFinished: Error, Hashable, Sendable {}

    private let sink: ReplySink
    private let open: Shared

    /// Whether the handler is still running: replies after it returned would break the protocol.
    final class Shared: Sendable {
        let isOpen = Mutex(true)
    }

    init(sink: ReplySink) {
        self.sink = sink
        self.open = Shared()
    }

    /// Sends `reply` with `continues: true`.
    ///
    /// - Throws: `CancellationError` if the handler has been cancelled (the client went away, or
    ///   the server is shutting down), ``CallFinished`` if the call is over, or the connection's
    ///   error if it failed.
    public func send(_ reply: Reply) async throws {
        try Task.checkCancellation()
        guard open.isOpen.withLock({ $0 }) else { throw CallFinished() }
        try await sink.write(reply, continues: true)
        try await sink.flush()
    }

    func finish() {
        open.isOpen.withLock { $0 = false }
    }
}
