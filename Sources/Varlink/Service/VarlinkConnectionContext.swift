import FoundationEssentials
import Logging
import NIOCore

/// What the router needs of a connection to answer its calls.
struct VarlinkConnectionContext: Sendable {
    let peer: VarlinkPeerCredentials
    let logger: Logger
    let outbound: NIOAsyncChannelOutboundWriter<ByteBuffer>
    let allocator: ByteBufferAllocator
    let closeFuture: EventLoopFuture<Void>
    let encoder: JSONEncoder
    let decoder: JSONDecoder
    let errors: VarlinkServerErrors

    func sink(oneway: Bool) -> ReplySink {
        ReplySink(outbound: outbound, allocator: allocator, encoder: encoder, closeFuture: closeFuture, oneway: oneway, errors: errors)
    }
}
