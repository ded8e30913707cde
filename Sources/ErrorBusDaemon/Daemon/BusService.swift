import ErrorBus
import ServiceLifecycle

/// Runs the bus in the service group. It is the first service, so the last to stop: everything
/// else has finished with it by then.
struct BusService: Service {
    let bus: ErrorBus

    func run() async throws {
        try await untilGracefulShutdown { await bus.run() }
    }
}
