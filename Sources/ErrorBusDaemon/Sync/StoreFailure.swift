import ErrorBus
import ErrorBusStore
import Logging

/// A store that cannot write (disk full, read-only) pauses sync: a `fatal` incident whose probe
/// checks the condition. Nothing is lost: files stay in the outbox.
enum StoreFailure {
    static func report(_ error: any Error, doing what: String, bus: ErrorBus, logger: Logger) async {
        logger.error("cannot \(what): \(error)")
        guard let storeError = error as? StoreError, storeError.isDiskFull || storeError.isReadOnly else { return }
        let failure = Failure(
            category: .fatal,
            scope: SyncService.service,
            cause: storeError.isDiskFull ? "diskFull" : "stateReadOnly",
            service: SyncService.service,
            text: OperatorText(
                title: storeError.isDiskFull ? "State disk full" : "State read-only",
                message: "errorbusd could not \(what): \(storeError)",
                next: "Uploads pause until the state directory can be written again; outbox files stay in place."
            )
        )
        await bus.report(failure)
    }
}
