import NIOCore

/// Closes a connection whose client sends nothing for too long after connecting: idle
/// connections would otherwise hold a place under the connection limits for ever. Once the first
/// bytes arrive it steps aside (a message that then stalls is the frame decoder's to time out;
/// a client may stay connected between its calls).
final class FirstMessageTimeoutHandler: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = ByteBuffer
    typealias InboundOut = ByteBuffer

    /// The client sent nothing within the timeout.
    struct FirstMessageTimeout: Error, Hashable, Sendable {
        let timeout: TimeAmount
    }

    private let timeout: TimeAmount
    private var deadline: Scheduled<Void>?

    init(timeout: TimeAmount) {
        self.timeout = timeout
    }

    func handlerAdded(context: ChannelHandlerContext) {
        let timeout = self.timeout
        deadline = context.eventLoop.assumeIsolated().scheduleTask(in: timeout) {
            context.fireErrorCaught(FirstMessageTimeout(timeout: timeout))
            context.close(promise: nil)
        }
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        cancelDeadline()
        context.fireChannelRead(data)
        context.pipeline.syncOperations.removeHandler(context: context, promise: nil)
    }

    func channelInactive(context: ChannelHandlerContext) {
        cancelDeadline()
        context.fireChannelInactive()
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        cancelDeadline()
    }

    private func cancelDeadline() {
        deadline?.cancel()
        deadline = nil
    }
}
