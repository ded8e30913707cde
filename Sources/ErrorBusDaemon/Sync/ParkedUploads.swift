import ErrorBus
import ErrorBusStore
import Logging

/// The uploads an incident holds back, parked under it in the store: parked in bulk (the
/// queue, or new files as they arrive), told to the bus, and released when the incident lets
/// go. Shared by the dispatcher (``SyncService``) and the intake (``OutboxIngest``).
struct ParkedUploads: Sendable {
    let store: JobStore
    let bus: ErrorBus
    let storeFailures: StoreFailures
    let logger: Logger
    /// Wakes the dispatcher: released jobs are queued.
    let wake: AsyncStream<Void>.Continuation

    /// How many jobs one transaction parks or releases: a million waiting jobs never hold the
    /// store's writer for one long transaction.
    static let chunk = 10_000

    /// The incident that holds uploads like `job` back, if any: a lock read, and a hop to the
    /// bus only while one does.
    func holder(of job: Job) async -> IncidentID? {
        guard bus.holdsBack(job) else { return nil }
        return await bus.holdingIncident(of: job)
    }

    /// Tells the bus that `count` jobs like `job` (`what` they were: "queued", "new") were
    /// parked under `incident`, which held them back. Should it have let go of its parked jobs
    /// meanwhile, these are released too.
    func parked(_ count: Int, _ what: String, like job: Job, under incident: IncidentID) async {
        guard count > 0 else { return }
        logger.debug("parked \(count) \(what) jobs under incident \(incident): it holds the uploads back")
        if await !bus.parkedHeldBack(job, under: incident) { await release(incident) }
    }

    /// `incident`'s cause is gone: the jobs parked under it are queued again, in their places,
    /// a chunk at a time; those that failed under it once `failedBackOff` has passed
    /// (``JobStore/releaseParked(_:limit:failedBackOff:)``).
    func release(_ incident: IncidentID, failedBackOff: Duration = .zero) async {
        var released = 0
        do {
            while true {
                let chunk = try await store.releaseParked(incident.rawValue, limit: Self.chunk, failedBackOff: failedBackOff)
                released += chunk
                // The oldest may go while the rest are released.
                wake.yield()
                if chunk < Self.chunk { break }
            }
        } catch {
            // They stay parked until the next start queues them again.
            await storeFailures.report(error, doing: "release the jobs parked under incident \(incident)")
        }
        logger.debug("\(released) jobs released by incident \(incident)")
    }
}
