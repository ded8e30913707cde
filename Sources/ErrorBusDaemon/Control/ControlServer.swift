import ErrorBusSupport
#if canImport(Glibc)
import Glibc
#endif
import Foundation
import Logging
import Synchronization
import ServiceLifecycle
import Systemd
import Varlink

/// The control socket: `io.errorbus.Control` over Varlink, for `errorbusctl`.
///
/// Served on the socket systemd passes (`FileDescriptorName=io.errorbus.Control` in
/// `errorbusd.socket`) when errorbusd is socket-activated, else on `control.socket-path`, bound
/// with mode 0666 (reading is open to anyone; the methods that change something check the
/// caller's credentials) and, when errorbusd runs as root, group-owned by `control.group`.
/// Graceful shutdown stops accepting, lets calls under way finish and ends `Watch` streams.
struct ControlServer: Service {
    let control: ControlService
    let configuration: DaemonConfiguration.Control
    /// The descriptor passed by socket activation, if any.
    let activated: SocketActivation.Descriptor?
    /// Told once the socket accepts connections (or the server has stopped trying).
    let listening: ControlSocketReadiness
    let logger: Logger

    func run() async throws {
        defer { listening.markStopped() }
        let address: VarlinkServer.Address
        if let activated {
            address = .listeningSocket(descriptor: activated.fileDescriptor)
        } else {
            let directory = (configuration.socketPath as NSString).deletingLastPathComponent
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
            address = .unixSocket(path: configuration.socketPath, mode: 0o666)
        }
        let server = VarlinkServer(
            router: try control.router(),
            configuration: .init(
                address: address,
                maximumConnections: configuration.maxConnections,
                maximumConnectionsPerUser: configuration.maxConnectionsPerUser,
                reservedConnections: configuration.reservedConnections,
                isPrivileged: { [authorization = control.authorization] in authorization.mayChange($0) }
            ),
            logger: logger
        ) { [configuration, activated, listening, logger, authorization = control.authorization] in
            if activated == nil { Self.setGroup(configuration.socketPath, authorization, logger: logger) }
            listening.markListening()
        }
        try await server.run()
    }

    /// Gives the socket file to `control.group`, when errorbusd may (it runs as root): the gid the
    /// method calls are checked against, resolved once.
    private static func setGroup(_ socketPath: String, _ authorization: ControlAuthorization, logger: Logger) {
        guard geteuid() == 0, let group = authorization.groupName else { return }
        guard let gid = authorization.groupID else {
            logger.warning("control.group \(group) does not exist: only root may change anything through the control socket")
            return
        }
        do {
            try SystemCall.check("chown", path: socketPath) { chown(socketPath, uid_t.max, gid) }
        } catch {
            logger.warning("cannot give the control socket to group \(group): \(error)")
        }
    }
}

/// Whether the control socket accepts connections yet: `READY=1` waits for it.
final class ControlSocketReadiness: Sendable {
    private let stream: AsyncStream<Never>
    private let continuation: AsyncStream<Never>.Continuation
    private let accepting = Atomic<Bool>(false)

    init() {
        (stream, continuation) = AsyncStream.makeStream(of: Never.self)
    }

    /// The socket accepts connections.
    func markListening() {
        accepting.store(true, ordering: .releasing)
        continuation.finish()
    }

    /// The server stopped (it failed to listen, or errorbusd is stopping).
    func markStopped() {
        continuation.finish()
    }

    /// Waits until the socket accepts connections or the server has stopped; returns whether it
    /// accepts them.
    func wait() async -> Bool {
        for await _ in stream {}
        return accepting.load(ordering: .acquiring)
    }
}
