import HTTPTypes
import Hummingbird
#if canImport(Glibc)
import Glibc
#endif
import Logging
import NIOCore
import ServiceLifecycle

/// The opt-in Prometheus scrape endpoint (`metrics.listen`): `GET /metrics` answers the same
/// exposition as `GetMetrics` on the control socket, so a scraper sees exactly what
/// `errorbusctl metrics` prints. Nothing else is served.
///
/// A listener that cannot start (the port is taken, or the unit's `SocketBindDeny=` forbids it)
/// is logged as an error and the daemon goes on delivering: metrics are never worth the work.
struct MetricsListener: Service {
    let address: DaemonConfiguration.Metrics.ListenAddress
    /// The exposition, its gauges brought up to date.
    let exposition: @Sendable () async throws -> String
    let logger: Logger
    /// Called with the port once it listens (a test's port 0 becomes a real one).
    var onListening: @Sendable (Int) async -> Void = { _ in }

    /// The exposition format's media type (Prometheus text format 0.0.4).
    static let contentType = "text/plain; version=0.0.4; charset=utf-8"

    func run() async throws {
        let router = Router(context: BasicRequestContext.self)
        let exposition = self.exposition
        router.get("/metrics") { _, _ -> Response in
            let text = try await exposition()
            return Response(
                status: .ok,
                headers: [.contentType: Self.contentType],
                body: ResponseBody(byteBuffer: ByteBuffer(string: text))
            )
        }
        // HEAD as GET without the body (no exposition made); any other method is refused.
        router.head("/metrics") { _, _ -> Response in
            Response(status: .ok, headers: [.contentType: Self.contentType])
        }
        for method in [HTTPRequest.Method.post, .put, .delete, .patch] {
            router.on("/metrics", method: method) { _, _ -> Response in
                Response(status: .methodNotAllowed, headers: [.allow: "GET, HEAD"])
            }
        }
        let address = self.address
        let logger = self.logger
        let onListening = self.onListening
        // Hummingbird logs every request at debug and its own start at info: keep it to warnings.
        var serverLogger = logger
        serverLogger.logLevel = max(logger.logLevel, .warning)
        let app = Application(
            router: router,
            // A scraper that opens a connection and sends nothing is cut off.
            server: .http1(configuration: .init(idleTimeout: .seconds(30))),
            configuration: .init(address: .hostname(address.host, port: address.port), serverName: nil),
            onServerRunning: { channel in
                let port = channel.localAddress?.port ?? address.port
                logger.notice("metrics served on http://\(DaemonConfiguration.Metrics.ListenAddress(host: address.host, port: port))/metrics (metrics.listen)")
                await onListening(port)
            },
            logger: serverLogger
        )
        do {
            try await app.run()
        } catch is CancellationError {
            // errorbusd is stopping.
        } catch {
            logger.error(
                "cannot serve metrics on metrics.listen \(address): \(Self.reason(error)). errorbusd goes on without it; is the port taken, or does errorbusd.service lack SocketBindAllow=tcp:\(address.port) (systemctl edit errorbusd)? errorbusctl metrics still answers"
            )
        }
    }

    /// Why the listener could not start, in words: `Address already in use`, not SwiftNIO's
    /// `bind(descriptor:ptr:bytes:): Address already in use) (errno: 98)`.
    static func reason(_ error: any Error) -> String {
        if let error = error as? IOError {
            return String(cString: strerror(error.errnoCode)) + " (errno \(error.errnoCode))"
        }
        return "\(error)"
    }
}
