import ErrorBusControl
import ErrorBusStore
import ErrorBusUnits
package import Logging
package import Systemd
import Varlink

/// Opens the store at a start, waiting while a cause that passes by itself keeps it closed.
///
/// Two causes pass without anyone restarting errorbusd: a full file system (a log rotated, a
/// backup finished, an administrator freeing room) and another errorbusd still holding the state
/// directory (one stopping, one run by hand). Failing the start on them would have systemd start
/// errorbusd again every `RestartSec=` for as long as they last, each start writing the same
/// lines to the journal. So errorbusd waits instead: it says why once, tells the service manager
/// (`READY=1` with the reason as `STATUS=`: errorbusd runs, and `systemctl start` and the boot
/// do not wait for the room to return), answers every control call with the reason, and tries
/// again, soon at first and then every ``maximumInterval``. Any other failure ends the start at
/// once, as before: no wait can fix it.
package struct StoreWait: Sendable {
    /// The first pause between two tries; each next one doubles, up to ``maximumInterval``.
    package var initialInterval: Duration = .seconds(1)
    package var maximumInterval: Duration = .seconds(30)
    /// How often the wait answers control calls, pings the watchdog and looks for a stop signal.
    package var tick: Duration = .milliseconds(250)

    private let notifier: SystemdNotifier
    private let controlSocket: CInt?
    private let logger: Logger

    /// - Parameters:
    ///   - notifier: Where the reason goes as `STATUS=`, with `READY=1` and watchdog pings.
    ///   - controlSocket: The control socket passed by socket activation, whose calls are
    ///     answered with the reason meanwhile; `nil` when errorbusd binds its own (it is not
    ///     bound yet, and a client hears that errorbusd does not run).
    package init(notifier: SystemdNotifier, controlSocket: CInt?, logger: Logger) {
        self.notifier = notifier
        self.controlSocket = controlSocket
        self.logger = logger
    }

    /// Whether `error` passes by itself, so that waiting for it beats failing the start.
    package static func passes(_ error: any Error) -> Bool {
        guard let error = error as? StoreError else { return false }
        return error.isDiskFull || error.isInUse
    }

    /// `text`, ending with a full stop.
    private static func sentence(_ text: String) -> String {
        text.hasSuffix(".") ? text : text + "."
    }

    /// Runs `open` until it succeeds or fails for a cause that does not pass by itself (thrown).
    ///
    /// - Returns: What `open` returned, or `nil` when SIGTERM or SIGINT arrived meanwhile: errorbusd
    ///   then stops without having started.
    package func untilOpen<Opened>(_ open: () async throws -> Opened) async throws -> Opened? {
        var interval = initialInterval
        var waitingSince: ContinuousClock.Instant?
        var told: String?
        while true {
            do {
                let opened = try await open()
                if let waitingSince {
                    logger.notice("The store opened after \(DurationText.format(.now - waitingSince)) of waiting: errorbusd starts")
                }
                return opened
            } catch where Self.passes(error) {
                let reason = Self.sentence("\(error)")
                if reason != told {
                    logger.warning("\(reason) errorbusd waits and tries again, every \(DurationText.format(maximumInterval)) at most, and starts once it can (errorbusctl tells why meanwhile).")
                    told = reason
                    // STATUS= with READY=1: a later READY=1, when errorbusd is ready, is ignored.
                    do {
                        try notifier.ready(status: "waiting for its store: \(reason)")
                    } catch {
                        logger.debug("Cannot notify the service manager", metadata: ["error": "\(error)"])
                    }
                }
                waitingSince = waitingSince ?? .now
                let answer = Control.storeUnavailable.error(.init(reason: "\(reason) errorbusd waits for it and starts once it can."))
                let next = ContinuousClock.now + interval
                while ContinuousClock.now < next {
                    if EarlySignals.arrived {
                        logger.notice("Stopping while waiting for the store: errorbusd did not start")
                        return nil
                    }
                    if let controlSocket {
                        _ = VarlinkServer.answerPendingCalls(on: controlSocket, with: answer)
                    }
                    try? notifier.watchdog()
                    try await Task.sleep(for: min(tick, next - .now))
                }
                interval = min(interval * 2, maximumInterval)
            }
        }
    }
}
