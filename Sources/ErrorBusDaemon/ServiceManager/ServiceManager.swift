import Logging
import Systemd

/// What errorbusd tells its service manager (systemd's notify protocol): ready, reloading,
/// stopping, its status line, watchdog pings. Outside systemd (no `$NOTIFY_SOCKET`) every call
/// does nothing. A message that cannot be sent is logged, never fatal: a missed `STATUS=` must
/// not stop the work.
struct ServiceManager: Sendable {
    let notifier: SystemdNotifier
    let logger: Logger

    func send(_ notifications: SystemdNotification...) {
        do {
            try notifier.send(notifications)
        } catch {
            logger.warning("cannot notify the service manager: \(error)", metadata: ["sent": "\(notifications.map(\.assignments))"])
        }
    }
}
