import HTTPTypes
import NIOCore
import NIOHTTPTypes
import Synchronization

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// Implements the `down` fault, which the router cannot: it sees each request head before
/// Hummingbird does and, when ``SandboxState/faults`` says the request's route is down, swallows
/// the request (head, body, end) and then resets the connection: `SO_LINGER` {1, 0} and close,
/// so the client gets a TCP RST instead of an answer. A `down` fault with a byte count lets the
/// request through and resets the connection only once its body passes that many bytes.
///
/// One instance per connection, used only on that connection's event loop.
final class ConnectionResetHandler: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPRequestPart
    typealias InboundOut = HTTPRequestPart

    /// The request being swallowed before the reset.
    private struct Doomed {
        let route: SandboxRoute
        let method: String
        let arrival: Duration
    }

    private enum Phase {
        /// Passing requests on.
        case serving
        /// Reading the request that will be answered with a reset.
        case swallowing(Doomed)
        /// Passing a request on while counting its body: reset once it passes `limit` bytes.
        case counting(Doomed, limit: Int, seen: Int)
        /// Reset sent: everything else is dropped.
        case reset
    }

    private let state: SandboxState
    private var phase = Phase.serving

    init(state: SandboxState) {
        self.state = state
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let part = unwrapInboundIn(data)
        switch phase {
        case .serving:
            guard case .head(let head) = part else {
                context.fireChannelRead(data)
                return
            }
            let route = SandboxRoute(path: head.path ?? "/")
            let arrival = state.clock.now
            guard route.isFaultable, let afterBytes = state.faults.withLock({ $0.reset(route, at: arrival) }) else {
                context.fireChannelRead(data)
                return
            }
            let doomed = Doomed(route: route, method: head.method.rawValue, arrival: arrival)
            if let afterBytes {
                phase = .counting(doomed, limit: afterBytes, seen: 0)
                context.fireChannelRead(data)
            } else {
                phase = .swallowing(doomed)
            }
        case .swallowing(let doomed):
            if case .end = part {
                phase = .reset
                reset(context: context, doomed: doomed)
            }
        case .counting(let doomed, let limit, let seen):
            switch part {
            case .body(let buffer) where seen + buffer.readableBytes > limit:
                phase = .reset
                reset(context: context, doomed: doomed)
            case .body(let buffer):
                phase = .counting(doomed, limit: limit, seen: seen + buffer.readableBytes)
                context.fireChannelRead(data)
            case .end:
                // Short enough: served.
                phase = .serving
                context.fireChannelRead(data)
            case .head:
                context.fireChannelRead(data)
            }
        case .reset:
            break
        }
    }

    private func reset(context: ChannelHandlerContext, doomed: Doomed) {
        state.record(route: doomed.route, method: doomed.method, outcome: .reset, arrival: doomed.arrival)
        let channel = context.channel
        guard let socket = channel as? any SocketOptionProvider else {
            // Not a socket (an embedded channel in a test): a plain close is the closest we get.
            context.close(promise: nil)
            return
        }
        socket.setSoLinger(linger(l_onoff: 1, l_linger: 0)).whenComplete { _ in
            channel.close(promise: nil)
        }
    }
}
