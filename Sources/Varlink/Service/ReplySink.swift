import FoundationEssentials
import Logging
import NIOCore

/// Where the replies to one call go: the connection's outbound writer, or nowhere for a
/// `oneway` call.
struct ReplySink: Sendable {
    let outbound: NIOAsyncChannelOutboundWriter<ByteBuffer>
    let allocator: ByteBufferAllocator
    let encoder: JSONEncoder
    /// Completes when the connection closes.
    let closeFuture: EventLoopFuture<Void>
    /// Replies to a `oneway` call are dropped.
    let oneway: Bool
    let errors: VarlinkServerErrors

    /// The connection failed while a reply was written: the client has gone or was disconnected.
    struct ConnectionFailed: Error {
        let underlying: any Error
    }

    func write<Reply: Encodable>(_ reply: Reply, continues: Bool) async throws {
        guard !oneway else { return }
        let message = VarlinkWire.Reply(parameters: reply, continues: continues ? true : nil)
        try await send(VarlinkWire.frame(message, encoder: encoder, allocator: allocator))
    }

    func write(error: VarlinkError) async throws {
        guard !oneway else { return }
        let message = VarlinkWire.ErrorReply(error: error.name, parameters: error.parameters)
        try await send(VarlinkWire.frame(message, encoder: encoder, allocator: allocator))
    }

    /// Waits until the event loop has taken every reply written so far.
    ///
    /// The outbound writer hands each write to the event loop and learns only later that the
    /// channel has stopped being writable; a handler that streams fast could queue any number of
    /// replies before then. Waiting here keeps it to one in flight, so a client that does not
    /// read holds at most the socket's buffers and the channel's high watermark.
    func flush() async throws {
        guard !oneway else { return }
        do {
            try await closeFuture.eventLoop.submit {}.get()
        } catch {
            throw ConnectionFailed(underlying: error)
        }
    }

    private func send(_ message: ByteBuffer) async throws {
        do {
            try await outbound.write(message)
        } catch {
            throw ConnectionFailed(underlying: error)
        }
    }

    /// Answers with the error a handler threw: a ``VarlinkError`` as it is, anything else as
    /// `InternalError`, logged, because its text is for the operator, not the caller. A failed
    /// connection or a cancelled handler is not answered: the error is rethrown and the
    /// connection closes.
    func write(failure: any Error, context: VarlinkCallContext) async throws {
        if failure is ConnectionFailed || failure is CancellationError {
            throw failure
        }
        if let error = failure as? VarlinkError {
            try await write(error: error)
        } else {
            context.logger.error(
                "Varlink method failed",
                metadata: ["varlink.method": "\(context.method)", "error": "\(String(reflecting: failure))"]
            )
            try await write(error: errors.internalError.error())
        }
    }
}
