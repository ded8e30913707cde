package import ErrorBusSupport
#if canImport(Glibc)
import Glibc
#endif
package import Logging
import ServiceLifecycle
import Synchronization

/// SIGTERM, SIGINT and SIGHUP while errorbusd starts, before the service group handles them.
///
/// The service group stops errorbusd gracefully on either, but only from the moment it runs:
/// its handling is a libdispatch signal source, which installs libdispatch's own `sigaction`
/// handler when the group registers it. Until then, after the configuration, the logging and the
/// store, each signal has its default action, and one sent then (a `systemctl stop` just after a
/// start) ended errorbusd at once, killed by the signal, its store left open.
///
/// Neither blocking nor ignoring the signals until then would do. On Linux the main thread,
/// which the Swift runtime hands to libdispatch (`dispatch_main`), waits in `sigsuspend` with an
/// empty mask, so it takes any signal the other threads block, default action and all; and a
/// signal ignored is discarded, so the stop would be lost.
///
/// So ``hold()``, errorbusd's first step, installs a handler that only remembers the signal. The
/// group's registration replaces it; the group starts its services only once its signal sources
/// are registered, so when ``Replay`` (one of them) runs, the group handles the signals, and
/// Replay sends the remembered one again: errorbusd stops as for a signal sent after the start.
///
/// SIGHUP likewise: until ``ReloadService`` traps it, its default action ended errorbusd (a
/// `systemctl reload` just after a start, a configuration tool's reload at each change). It is
/// remembered, and the reload service reloads once for it (``takeReload()``): the configuration
/// may have changed after errorbusd read it.
package enum EarlySignals {
    /// The signal that arrived while held, or 0.
    private static let received = Atomic<CInt>(0)

    /// Whether SIGHUP arrived while held.
    private static let reloadAsked = Atomic<Bool>(false)

    /// The signals the service group stops errorbusd on.
    private static let signals = [SIGTERM, SIGINT]

    /// Whether SIGTERM or SIGINT arrived while held: a start that waits (``StoreWait``) stops.
    package static var arrived: Bool {
        received.load(ordering: .relaxed) != 0
    }

    /// Whether SIGHUP arrived while held, and not since taken: the reload service calls it once it
    /// traps SIGHUP itself, and reloads if so.
    package static func takeReload() -> Bool {
        reloadAsked.exchange(false, ordering: .relaxed)
    }

    /// Remembers SIGTERM, SIGINT and SIGHUP instead of ending the process, until the service
    /// group and the reload service handle them. Call it first, before anything that may take
    /// time.
    package static func hold() throws(SystemCallError) {
        // Initialized here, not in the handler: a signal handler may only touch memory that
        // needs no lock.
        received.store(0, ordering: .relaxed)
        reloadAsked.store(false, ordering: .relaxed)
        var action = sigaction()
        action.__sigaction_handler.sa_handler = { number in
            if number == SIGHUP {
                EarlySignals.reloadAsked.store(true, ordering: .relaxed)
            } else {
                EarlySignals.received.store(number, ordering: .relaxed)
            }
        }
        sigemptyset(&action.sa_mask)
        action.sa_flags = SA_RESTART
        for number in signals + [SIGHUP] {
            try SystemCall.check("sigaction") { sigaction(number, &action, nil) }
        }
    }

    /// Sends again the stop signal that arrived while held, once the service group handles it.
    /// Place it in the group that names SIGTERM and SIGINT as its graceful shutdown signals.
    ///
    /// It then waits for its graceful shutdown: a service that ends while the group shuts down,
    /// before the group asks it to, makes the group cancel every other service and fail, and
    /// the shutdown may well have begun by then (the signal it sent, or one sent just after the
    /// group started).
    package struct Replay: Service {
        private let logger: Logger

        package init(logger: Logger) {
            self.logger = logger
        }

        package func run() async throws {
            let number = EarlySignals.received.exchange(0, ordering: .relaxed)
            if number != 0 {
                logger.notice("\(number == SIGINT ? "SIGINT" : "SIGTERM") arrived while errorbusd was starting: stopping")
                try SystemCall.check("kill") { kill(getpid(), number) }
            }
            // Cancelled instead when shutdown.drain-timeout runs out: ends all the same.
            try? await gracefulShutdown()
        }
    }
}
