import ErrorBusDaemon
import Logging
import ServiceLifecycle
import UnixSignals

#if canImport(Glibc)
import Glibc
#endif

/// The program `NetworkChangeMonitorTests` runs inside a network namespace of its own
/// (`unshare --net`): it watches that namespace's links, addresses and routes with
/// `NetworkChangeMonitor` until SIGTERM, and prints one line per fact on standard output:
///
///     log Watching network changes (netlink: links, addresses, routes)
///     change 1 notifications=7 links=1 addresses=3 routes=3 lost=false
///     stopped
///
/// It ends by itself after 60 s, so it never outlives a test that crashed for long.
///
/// Usage: `network-test-helper [DEBOUNCE_MS]` (default 500).
@main
struct NetworkTestHelper {
    static func main() async {
        let arguments = CommandLine.arguments.dropFirst()
        let debounce = arguments.first.flatMap { Int($0) }.map { Duration.milliseconds($0) } ?? .milliseconds(500)
        let logger = Logger(label: "network-test-helper") { _ in LineLogHandler() }
        let counter = ChangeCounter()
        let monitor = NetworkChangeMonitor(debounce: debounce, logger: logger) { change in
            let number = await counter.next()
            LineLogHandler.emit(
                "change \(number) notifications=\(change.notifications) links=\(change.links) addresses=\(change.addresses) routes=\(change.routes) lost=\(change.notificationsLost)"
            )
        }
        let group = ServiceGroup(
            configuration: .init(
                services: [.init(service: monitor), .init(service: Lifetime(limit: .seconds(60)))],
                gracefulShutdownSignals: [.sigterm, .sigint],
                logger: logger
            )
        )
        do {
            try await group.run()
            LineLogHandler.emit("stopped")
        } catch {
            LineLogHandler.emit("failed \(error)")
            exit(1)
        }
    }
}

/// Ends the helper after `limit` even if nobody sends SIGTERM (a test that crashed), so it can
/// never outlive its test for long.
struct Lifetime: Service {
    let limit: Duration

    func run() async {
        try? await cancelWhenGracefulShutdown { try await Task.sleep(for: limit) }
    }
}

/// Numbers the changes as they are reported.
actor ChangeCounter {
    private var count = 0

    func next() -> Int {
        count += 1
        return count
    }
}

/// Prints each log message as `log <message>`, one line, flushed at once (standard output is a
/// socket, fully buffered otherwise).
struct LineLogHandler: LogHandler {
    var logLevel: Logger.Level = .info
    var metadata: Logger.Metadata = [:]

    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    func log(event: LogEvent) {
        Self.emit("log \(event.level) \(event.message)")
    }

    static func emit(_ line: String) {
        print(line)
        fflush(nil)
    }
}
