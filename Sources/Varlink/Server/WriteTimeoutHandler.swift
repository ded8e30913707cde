import NIOCore

/// Closes a connection that has been unable to take more output for too long: its peer has
/// stopped reading. Until then the replies wait (the channel is not writable, so the
/// `NIOAsyncChannel` writer suspends its caller), which bounds the memory a slow peer can hold.
final class WriteTimeoutHandler: ChannelInboundHandler {
    typealias InboundIn = ByteBuffer

    /// The connection's peer did not read for the whole timeout.
    struct WriteTimeout: Error, Hashable, Sendable {
        let timeout: TimeAmount
    }

    private let timeout: TimeAmount
    private var deadline: Scheduled<Void>?

    init(timeout: TimeAmount) {
        self.timeout = timeout
    }

    func channelWritabilityChanged(context: ChannelHandlerContext) {
        if context.channel.isWritable {
            cancelDeadline()
        } else if deadline == nil {
            let timeout = self.timeout
            deadline = context.eventLoop.assumeIsolated().scheduleTask(in: timeout) {
                context.fireErrorCaught(WriteTimeout(timeout: timeout))
                context.close(promise: nil)
            }
        }
        context.fireChannelWritabilityChanged()
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
