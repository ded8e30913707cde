import ErrorBusUnits
import ErrorBus
import ErrorBusStore
import ErrorBusSupport
import Logging

/// Reports what the store could not do. A store that cannot write (disk full, read-only) pauses
/// sync: a `fatal` incident whose probe checks the condition (`state.min-free-space` free, the
/// directory writable). Nothing is lost: files stay in the outbox. Such a failure is told by its
/// incident, once, however many files met it; any other store failure is logged as it happens.
struct StoreFailures: Sendable {
    let bus: ErrorBus
    let logger: Logger
    /// `state.min-free-space`: what the incident waits for.
    let minFreeSpace: Int64

    func report(_ error: any Error, doing what: String) async {
        guard let storeError = error as? StoreError, storeError.isDiskFull || storeError.isReadOnly else {
            logger.error("cannot \(what): \(error)")
            return
        }
        logger.debug("cannot \(what): \(error)")
        let failure = Failure(
            category: .fatal,
            scope: SyncService.service,
            cause: storeError.isDiskFull ? "diskFull" : "stateReadOnly",
            service: SyncService.service,
            text: OperatorText(
                title: storeError.isDiskFull ? "State disk full" : "State read-only",
                message: "errorbusd could not \(what): \(storeError)",
                next: "Uploads pause until the state directory can be written with \(ByteCountText.exact(minFreeSpace)) free (state.min-free-space), checked with a back-off and at once by errorbusctl retry of this incident; outbox files stay in place."
            )
        )
        await bus.report(failure)
    }
}
