import ErrorBusUnits
import ErrorBus
import ErrorBusSupport
import Logging
import ServiceLifecycle
import Systemd

/// Says errorbusd is ready once everything is assembled and running and the control socket
/// accepts connections (a log line with the time since the process started, and `READY=1`),
/// keeps the service manager's `STATUS=` line current from the bus, and says `STOPPING=1` when
/// graceful shutdown begins.
///
/// The status follows the bus's events, at most once per `minimumInterval`, and is refreshed
/// every `refreshInterval` while an incident is open so its "next probe in …" stays true. An
/// unchanged line is not sent again.
struct Readiness: Service {
    let startedAt: ContinuousClock.Instant
    let bus: ErrorBus
    let manager: ServiceManager
    /// The control socket, which must accept connections before `READY=1`.
    let controlSocket: ControlSocketReadiness
    /// The health verdict the status line starts with.
    let health: HealthMonitor
    /// The bus's state with the jobs parked in sync's store (``ParkedJobs``).
    let parked: @Sendable (BusSnapshot) -> ParkedJobs
    let logger: Logger
    var minimumInterval: Duration = .seconds(1)
    var refreshInterval: Duration = .seconds(5)

    func run() async throws {
        if await !controlSocket.wait() {
            // The control server failed (the group is stopping because of it) or errorbusd is
            // stopping before it ever listened: not ready.
            try? await gracefulShutdown()
            return
        }
        logger.notice("errorbusd ready", metadata: ["startup": "\(DurationText.format(startedAt.duration(to: .now)))"])
        let first = await statusLine()
        manager.send(.ready, .status(first))
        if manager.notifier.isEnabled {
            try? await untilGracefulShutdown { await keepStatusCurrent(from: first) }
        } else {
            try? await gracefulShutdown()
        }
        manager.send(.stopping, .status("stopping: finishing uploads under way"))
    }

    private func statusLine() async -> String {
        let parked = parked(await bus.snapshot())
        return StatusLine.render(parked, health: health.report(parked))
    }

    private func keepStatusCurrent(from first: String) async {
        let (changes, change) = AsyncStream.makeStream(of: Void.self, bufferingPolicy: .bufferingNewest(1))
        let subscription = await bus.subscribe()
        await withDiscardingTaskGroup { group in
            group.addTask {
                for await _ in subscription { change.yield() }
            }
            group.addTask {
                while (try? await Task.sleep(for: refreshInterval)) != nil { change.yield() }
            }
            group.addTask {
                var sent = first
                for await _ in changes {
                    let line = await statusLine()
                    if line != sent {
                        manager.send(.status(line))
                        sent = line
                    }
                    guard (try? await Task.sleep(for: minimumInterval)) != nil else { return }
                }
            }
        }
    }
}
