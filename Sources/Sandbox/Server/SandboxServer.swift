public import Logging
public import ServiceLifecycle
import Hummingbird
import HummingbirdCore
import NIOCore

/// `errorbus-sandbox` as a service: a local HTTP server that speaks the remote API the errorbus
/// services use and misbehaves on request (docs/sandbox.md, "The API it serves").
///
/// Nothing happens until ``run()``; it returns after a graceful shutdown (in-flight requests
/// answered) or throws if it cannot bind. Run it in a `ServiceGroup`, or directly in a test.
public struct SandboxServer: Service {
    private let configuration: SandboxConfiguration
    private let clock: SandboxClock
    private let logger: Logger
    private let onListening: @Sendable (Int) async -> Void

    /// Creates the server.
    /// - Parameters:
    ///   - configuration: Address, credentials and limits.
    ///   - clock: The time faults, tokens, delays and counters use; tests pass a manual clock.
    ///   - logger: Where the server logs.
    ///   - onListening: Called once with the bound port when the server accepts connections.
    public init(
        configuration: SandboxConfiguration = .init(),
        clock: SandboxClock = .continuous,
        logger: Logger,
        onListening: @escaping @Sendable (_ port: Int) async -> Void = { _ in }
    ) {
        self.configuration = configuration
        self.clock = clock
        self.logger = logger
        self.onListening = onListening
    }

    /// Serves until graceful shutdown.
    public func run() async throws {
        let state = SandboxState(configuration: configuration, clock: clock, logger: logger)
        let router = Router(context: BasicRequestContext.self)
        AdminAPI(state: state).register(on: router)
        router.add(middleware: FaultInjectionMiddleware(state: state))
        SandboxAPI(state: state).register(on: router)

        let onListening = self.onListening
        let logger = self.logger
        let app = Application(
            router: router,
            server: .http1(configuration: .init(additionalChannelHandlers: [ConnectionResetHandler(state: state)])),
            configuration: .init(
                address: .hostname(configuration.host, port: configuration.port),
                serverName: "errorbus-sandbox"
            ),
            onServerRunning: { channel in
                let port = channel.localAddress?.port ?? 0
                // After `onListening` (which writes the port file): the line promises the file.
                await onListening(port)
                logger.info("errorbus-sandbox listening", metadata: ["sandbox.port": "\(port)"])
            },
            logger: logger
        )
        try await app.run()
    }
}

extension SandboxServer: CustomStringConvertible {
    /// How service-lifecycle names the service in its logs (without the configuration's secret).
    public var description: String { "SandboxServer(\(configuration.host):\(configuration.port))" }
}
