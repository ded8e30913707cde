import Logging
import NotesService
import ServiceLifecycle
import UnixSignals
import Varlink

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// `notesd SOCKET`: serves `org.example.notes` on the Unix socket `SOCKET` until SIGTERM or
/// SIGINT.
@main
struct NotesDaemon {
    static func main() async throws {
        guard CommandLine.arguments.count == 2 else {
            var usage = "usage: notesd SOCKET\n"
            usage.withUTF8 { _ = write(STDERR_FILENO, $0.baseAddress, $0.count) }
            exit(64)
        }
        let socketPath = CommandLine.arguments[1]
        LoggingSystem.bootstrap(StreamLogHandler.standardError)
        let logger = Logger(label: "notesd")

        // sample: varlink-server
        let server = VarlinkServer(
            router: try makeRouter(serving: Notebook()),
            configuration: .init(address: .unixSocket(path: socketPath)),
            logger: logger
        )
        // On SIGTERM or SIGINT the server stops accepting, lets calls in progress finish, ends
        // the streams, and removes its socket file; then run() returns.
        let group = ServiceGroup(
            services: [server],
            gracefulShutdownSignals: [.sigterm, .sigint],
            logger: logger
        )
        try await group.run()
        // end sample
    }
}
