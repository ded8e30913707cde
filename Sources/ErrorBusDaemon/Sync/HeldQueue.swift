import ErrorBus
import ErrorBusStore

/// A service's queued jobs that an incident holds back: they wait in the store, behind it, as
/// the jobs parked under it wait in the bus. To an operator they are parked too.
struct HeldQueue: Sendable, Equatable {
    var service: String
    /// The oldest open incident holding them; `nil` when the bus's stop holds them.
    var incident: IncidentID?
    var jobs: Int
}

/// Where a service's pending jobs wait, as an operator is told (status, the job gauges): the
/// store's counts, with the jobs the bus holds (in flight to the store) and the queued ones an
/// incident holds back told as parked. The one place that works it out.
struct JobPlaces: Equatable {
    var queued: Int
    var inFlight: Int
    /// The jobs the bus holds and the queued ones held back.
    var parked: Int
    var deadLettered: Int
    /// Of ``parked``, the queued jobs an incident holds back.
    var heldBack: Int

    /// - Parameters:
    ///   - counts: The store's counts of the service's jobs.
    ///   - heldByBus: The service's jobs the bus holds (``BusSnapshot/heldByService``).
    ///   - heldQueue: The queue an incident holds back, if any (of whichever service).
    init(service: String, counts: JobCounts, heldByBus: Int, heldQueue: HeldQueue?) {
        // The queue's length read apart from `counts`: never more than these counts have.
        heldBack = heldQueue.map { $0.service == service ? min($0.jobs, counts.queued) : 0 } ?? 0
        queued = counts.queued - heldBack
        inFlight = max(0, counts.inFlight - heldByBus)
        parked = heldByBus + heldBack
        deadLettered = counts.deadLettered
    }
}
