import FoundationEssentials
public import Logging
public import NIOCore
public import NIOPosix
public import ServiceLifecycle

/// A Varlink server on a Unix domain socket.
///
/// It is a swift-service-lifecycle `Service`: creating it does nothing; ``run()`` binds the
/// socket (or adopts a listening one), serves connections until it is cancelled or shut down
/// gracefully, and removes the socket file it bound. On graceful shutdown it stops accepting,
/// closes idle connections, lets calls in progress finish and ends streaming calls by
/// cancelling their handlers (a handler may still return a last reply).
///
/// Each connection is served by one task that answers its calls in order (Varlink allows one
/// call at a time per connection; pipelined calls wait their turn). A connection that breaks
/// the protocol or a limit of ``Configuration`` is told why when possible, then closed, without
/// affecting the others.
///
/// ```swift
/// let server = VarlinkServer(
///     router: router,
///     configuration: .init(address: .unixSocket(path: "/run/notesd/org.example.notes")),
///     logger: logger
/// )
/// let group = ServiceGroup(services: [server, ...], gracefulShutdownSignals: [.sigterm], logger: logger)
/// try await group.run()
/// ```
public struct VarlinkServer: Service {
    let router: VarlinkRouter
    private let configuration: Configuration
    private let eventLoopGroup: any EventLoopGroup
    let logger: Logger
    private let onListening: (@Sendable () async -> Void)?

    /// Creates a server; nothing happens until ``run()``.
    ///
    /// - Parameters:
    ///   - router: The interfaces and method handlers to serve.
    ///   - configuration: Where to listen and the limits per connection.
    ///   - eventLoopGroup: The event loops for the sockets.
    ///   - logger: Where connection problems are logged (at `notice` and below) and handler
    ///     failures (at `error`).
    ///   - onListening: Called once the socket accepts connections, before the first is served:
    ///     the moment to tell systemd `READY=1`.
    public init(
        router: VarlinkRouter,
        configuration: Configuration,
        eventLoopGroup: any EventLoopGroup = MultiThreadedEventLoopGroup.singleton,
        logger: Logger,
        onListening: (@Sendable () async -> Void)? = nil
    ) {
        self.router = router
        self.configuration = configuration
        self.eventLoopGroup = eventLoopGroup
        self.logger = logger
        self.onListening = onListening
    }

    /// Listens and serves until cancelled or shut down gracefully.
    ///
    /// - Throws: ``VarlinkServerError`` if it cannot listen; errors of the listening socket.
    public func run() async throws {
        let connections = ConnectionLimits(
            maximum: configuration.maximumConnections,
            maximumPerUser: configuration.maximumConnectionsPerUser,
            reserved: configuration.reservedConnections
        )
        let pending = PendingConnections()
        let serverChannel = try await listen(connections: connections, pending: pending)
        defer {
            if case .path(let path, _) = configuration.address.kind { SocketFile.remove(at: path) }
        }
        logger.info("Varlink server listening", metadata: ["varlink.address": "\(configuration.address)"])
        await onListening?()

        let encoder = VarlinkWire.makeEncoder()
        let decoder = VarlinkWire.makeDecoder()
        do {
            try await withGracefulShutdownHandler {
                // A discarding group: connections that end leave nothing behind.
                try await withThrowingDiscardingTaskGroup { group in
                    try await serverChannel.executeThenClose { inbound in
                        for try await connection in inbound {
                            guard case .accepted(let channel, let peer) = connection else { continue }
                            pending.take(channel)
                            group.addTask {
                                await serve(channel, peer: peer, encoder: encoder, decoder: decoder)
                            }
                        }
                    }
                }
            } onGracefulShutdown: {
                // Stop accepting; the connections shut down through their own handlers.
                serverChannel.channel.close(promise: nil)
            }
        } catch {
            await pending.closeRemaining()
            throw error
        }
        // Connections accepted as the listening socket closed never reached the loop.
        await pending.closeRemaining()
        logger.info("Varlink server stopped", metadata: ["varlink.address": "\(configuration.address)"])
    }

    /// A connection as the accept loop receives it.
    enum AcceptedConnection: Sendable {
        case accepted(NIOAsyncChannel<ByteBuffer, ByteBuffer>, peer: VarlinkPeerCredentials)
        /// Beyond the connection limit: it is being told so and closed.
        case rejected
    }

    private func listen(
        connections: ConnectionLimits,
        pending: PendingConnections
    ) async throws -> NIOAsyncChannel<AcceptedConnection, Never> {
        let bootstrap = ServerBootstrap(group: eventLoopGroup)
            .serverChannelOption(.backlog, value: 256)
        let errors = router.serverErrors
        let initializer: @Sendable (any Channel) -> EventLoopFuture<AcceptedConnection> = { [configuration] channel in
            Self.initialize(channel, configuration: configuration, errors: errors, connections: connections, pending: pending)
        }
        switch configuration.address.kind {
        case .path(let path, let mode):
            try await SocketFile.removeStale(at: path, eventLoopGroup: eventLoopGroup)
            let channel = try await bootstrap.bind(
                unixDomainSocketPath: path,
                cleanupExistingSocketFile: false,
                childChannelInitializer: initializer
            )
            do {
                try SocketFile.setMode(mode, at: path)
            } catch {
                try? await channel.channel.close()
                SocketFile.remove(at: path)
                throw error
            }
            return channel
        case .descriptor(let descriptor):
            // The asynchronous form of `ServerBootstrap.withBoundSocket`: the socket listens already.
            return try await bootstrap.bind(descriptor, childChannelInitializer: initializer)
        }
    }

    /// Sets up an accepted connection on its event loop: reads its peer's credentials, counts it
    /// against the limits, and adds the framing and the timeouts.
    private static func initialize(
        _ channel: any Channel,
        configuration: Configuration,
        errors: VarlinkServerErrors,
        connections: ConnectionLimits,
        pending: PendingConnections
    ) -> EventLoopFuture<AcceptedConnection> {
        channel.peerCredentials().flatMapThrowing { peer in
            let admission: ConnectionLimits.Admission
            switch connections.admit(peer, isPrivileged: configuration.isPrivileged) {
            case .success(let admitted):
                admission = admitted
            case .failure(let refusal):
                let error = errors.tooManyConnections.error(.init(maximum: refusal.limit))
                let message = try VarlinkWire.frame(
                    VarlinkWire.ErrorReply(error: error.name, parameters: error.parameters),
                    encoder: VarlinkWire.makeEncoder(),
                    allocator: channel.allocator
                )
                try channel.pipeline.syncOperations.addHandler(RejectConnectionHandler(message: message))
                return .rejected
            }
            channel.closeFuture.whenComplete { _ in connections.release(admission) }
            try channel.pipeline.syncOperations.addHandler(FirstMessageTimeoutHandler(timeout: TimeAmount(configuration.firstMessageTimeout)))
            try channel.pipeline.syncOperations.addHandler(
                ByteToMessageHandler(
                    VarlinkFrameDecoder(
                        maximumMessageSize: configuration.maximumMessageSize,
                        messageTimeout: TimeAmount(configuration.messageTimeout)
                    )
                )
            )
            try channel.pipeline.syncOperations.addHandler(WriteTimeoutHandler(timeout: TimeAmount(configuration.writeTimeout)))
            let wrapped = try pending.register(channel) { channel in
                try NIOAsyncChannel<ByteBuffer, ByteBuffer>(wrappingChannelSynchronously: channel)
            }
            guard let wrapped else { return .rejected }
            return .accepted(wrapped, peer: peer)
        }
    }
}
