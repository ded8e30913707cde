import NIOCore

/// Sends one message to a connection the server does not serve (beyond its connection limit)
/// as soon as it is active, then closes it. Whatever the peer sends is ignored.
final class RejectConnectionHandler: ChannelInboundHandler {
    typealias InboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer

    private let message: ByteBuffer
    private var sent = false

    init(message: ByteBuffer) {
        self.message = message
    }

    func handlerAdded(context: ChannelHandlerContext) {
        if context.channel.isActive { reject(context: context) }
    }

    func channelActive(context: ChannelHandlerContext) {
        reject(context: context)
        context.fireChannelActive()
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {}

    private func reject(context: ChannelHandlerContext) {
        guard !sent else { return }
        sent = true
        context.writeAndFlush(Self.wrapOutboundOut(message)).assumeIsolated().whenComplete { _ in
            context.close(promise: nil)
        }
    }
}
