import FoundationEssentials
import Logging
import NIOCore
import ServiceLifecycle

extension VarlinkServer {
    /// Serves one connection until it closes. Never throws: whatever goes wrong ends this
    /// connection only.
    func serve(
        _ channel: NIOAsyncChannel<ByteBuffer, ByteBuffer>,
        peer: VarlinkPeerCredentials,
        encoder: JSONEncoder,
        decoder: JSONDecoder
    ) async {
        var logger = self.logger
        logger[metadataKey: "varlink.peer"] = "\(peer)"
        logger.debug("Varlink connection opened")
        let quiescer = ConnectionQuiescer(channel: channel.channel)
        await withGracefulShutdownHandler {
            do {
                try await channel.executeThenClose { inbound, outbound in
                    let connection = VarlinkConnectionContext(
                        peer: peer,
                        logger: logger,
                        outbound: outbound,
                        allocator: channel.channel.allocator,
                        closeFuture: channel.channel.closeFuture,
                        encoder: encoder,
                        decoder: decoder,
                        errors: router.serverErrors
                    )
                    try await serveCalls(inbound, connection: connection, quiescer: quiescer)
                }
                logger.debug("Varlink connection closed")
            } catch let error as VarlinkFrameDecoder.MessageTimeout {
                logger.notice("Disconnected a Varlink client that stalled in the middle of a message", metadata: ["timeout": "\(error.timeout)"])
            } catch let error as FirstMessageTimeoutHandler.FirstMessageTimeout {
                logger.notice("Disconnected a Varlink client that sent nothing after connecting", metadata: ["timeout": "\(error.timeout)", "peer": "\(peer)"])
            } catch let error as WriteTimeoutHandler.WriteTimeout {
                logger.notice("Disconnected a Varlink client that stopped reading its replies", metadata: ["timeout": "\(error.timeout)"])
            } catch {
                logger.debug("Varlink connection closed", metadata: ["error": "\(error)"])
            }
        } onGracefulShutdown: {
            quiescer.shutDown()
        }
    }

    private func serveCalls(
        _ inbound: NIOAsyncChannelInboundStream<ByteBuffer>,
        connection: VarlinkConnectionContext,
        quiescer: ConnectionQuiescer
    ) async throws {
        var messages = inbound.makeAsyncIterator()
        do {
            while quiescer.becomeIdle(), let message = try await messages.next() {
                guard quiescer.becomeBusy() else { return }
                guard await router.respond(to: message, connection: connection) == .keepOpen else { return }
            }
        } catch let error as VarlinkFrameDecoder.MessageTooLarge {
            connection.logger.notice(
                "Closing a Varlink connection that sent a message over the size limit",
                metadata: ["maximum": "\(error.maximumMessageSize)"]
            )
            let reply = router.serverErrors.messageTooLarge.error(.init(maximum: error.maximumMessageSize))
            try? await connection.sink(oneway: false).write(error: reply)
        }
    }
}
