extension SystemdNotifier {
    /// The watchdog timeout the service manager set for this process (`WatchdogSec=`), or `nil`
    /// when there is none.
    ///
    /// Uses `sd_watchdog_enabled`, which reads `$WATCHDOG_USEC` and answers only when
    /// `$WATCHDOG_PID` is unset or names this process, so a child that inherited the
    /// environment does not take over its parent's watchdog. The environment is left in place.
    /// Send ``watchdog()`` at about half this interval.
    public static func watchdogInterval() throws(SystemdError) -> Duration? {
        try Libsystemd.watchdogEnabled().map { .microseconds($0) }
    }
}
