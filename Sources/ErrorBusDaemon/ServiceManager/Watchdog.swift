import ErrorBusUnits
import ErrorBus
import ErrorBusSupport
import Logging
import ServiceLifecycle
import Synchronization
import Systemd

/// Pings the service manager's watchdog (`WATCHDOG=1`) at half its interval, but only while the
/// bus answers: a wedged bus means no ping, and systemd restarts the daemon.
///
/// Two loops, so that a health check that never returns cannot hold the decision up: one asks
/// the bus and records when it last answered; the other pings while that answer is recent.
struct Watchdog: Service {
    /// `WATCHDOG_USEC`: systemd restarts the service when no ping arrives for this long.
    let interval: Duration
    let manager: ServiceManager
    let logger: Logger
    /// Returns once the bus has answered, `true` when it is healthy (its run loop running).
    let healthCheck: @Sendable () async -> Bool

    init(interval: Duration, manager: ServiceManager, logger: Logger, healthCheck: @escaping @Sendable () async -> Bool) {
        self.interval = interval
        self.manager = manager
        self.logger = logger
        self.healthCheck = healthCheck
    }

    init(interval: Duration, bus: ErrorBus, manager: ServiceManager, logger: Logger) {
        self.init(interval: interval, manager: manager, logger: logger) { await bus.snapshot().isRunning }
    }

    func run() async throws {
        let period = interval / 2
        let answered = LastAnswer()
        try await untilGracefulShutdown {
            try await withThrowingDiscardingTaskGroup { group in
                group.addTask {
                    while true {
                        if await healthCheck() { answered.record() }
                        try await Task.sleep(for: period)
                    }
                }
                group.addTask {
                    var missed = false
                    while true {
                        try await Task.sleep(for: period)
                        // The check runs once per period: an answer older than that plus a
                        // margin means the last one has been waiting on the bus.
                        if answered.age <= period + period / 2 {
                            manager.send(.watchdog)
                            missed = false
                        } else if !missed {
                            logger.critical("the bus has not answered a health check for \(DurationText.format(answered.age)): no watchdog ping, systemd will restart errorbusd")
                            missed = true
                        }
                    }
                }
            }
        }
    }
}

/// When the health check last succeeded.
private final class LastAnswer: Sendable {
    private let instant = Mutex(ContinuousClock.now)

    func record() { instant.withLock { $0 = .now } }

    var age: Duration { instant.withLock { $0.duration(to: .now) } }
}
