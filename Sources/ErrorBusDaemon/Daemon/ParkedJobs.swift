import ErrorBus
import ErrorBusStore

/// How many jobs wait parked, and under which incident, as status, health and `STATUS=` tell
/// it. A job is parked in one place: sync's are rows of its store, under their incident; the
/// loader's and auth's are kept by the bus. This is the one place that puts the two together,
/// read at one moment: a bus snapshot, and one read of the store's `parked_count`.
struct ParkedJobs: Sendable {
    /// The bus's state, with the jobs it keeps.
    let snapshot: BusSnapshot
    /// The jobs parked in sync's store, by incident.
    let stored: [UInt64: Int]

    init(_ snapshot: BusSnapshot, store: JobStore) throws(StoreError) {
        self.init(snapshot, stored: try store.parkedCounts())
    }

    init(_ snapshot: BusSnapshot, stored: [UInt64: Int] = [:]) {
        self.snapshot = snapshot
        self.stored = stored
    }

    /// Every parked job.
    var total: Int {
        stored.values.reduce(0, +) + snapshot.heldByService.values.reduce(0, +)
    }

    /// The jobs of service `name` that wait parked.
    func of(service name: String) -> Int {
        (name == SyncService.service ? stored.values.reduce(0, +) : 0) + (snapshot.heldByService[name] ?? 0)
    }

    /// The jobs parked under `incident`: those the bus keeps and those in the store.
    func under(_ incident: IncidentSnapshot) -> Int {
        Self.under(incident, stored: stored)
    }

    /// The jobs parked under `incident`, with `stored`, the store's by incident.
    static func under(_ incident: IncidentSnapshot, stored: [UInt64: Int]) -> Int {
        incident.parked + (stored[incident.id.rawValue] ?? 0)
    }

    /// Whether `incident` holds jobs of service `name`.
    func holds(_ incident: IncidentSnapshot, jobsOf name: String) -> Bool {
        (incident.parkedByService[name] ?? 0) > 0 || (name == SyncService.service && stored[incident.id.rawValue] != nil)
    }
}
