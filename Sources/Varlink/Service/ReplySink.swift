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

    func write<Reply: Encodable>(_ reply: Reply, continues: Bool) async throws {
        guard !oneway else { return }
        let message = VarlinkWire.Reply(parameters: reply, continues: continues ? true : nil)
        try await outbound.write(VarlinkWire.frame(message, encoder: encoder, allocator: allocator))
    }

    func write(error: VarlinkError) async throws {
        guard !oneway else { return }
        let message = VarlinkWire.ErrorReply(error: error.name, parameters: error.parameters)
        try await outbound.write(VarlinkWire.frame(message, encoder: encoder, allocator: allocator))
    }

    /// Answers with the error a handler threw: a ``VarlinkError`` as it is, anything else as
    /// `InternalError`, logged, because its text is for the operator, not the caller.
    func write(failure: any Error, context: VarlinkCallContext) async throws {
        if let error = failure as? VarlinkError {
            try await write(error: error)
        } else {
            context.logger.error(
                "Varlink method failed",
                metadata: ["varlink.method": "\(context.method)", "error": "\(String(reflecting: failure))"]
            )
            try await write(error: VarlinkServerErrors.internalError.error())
        }
    }
}
