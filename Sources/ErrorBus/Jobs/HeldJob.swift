/// A job the bus holds instead of running it: parked under an open incident, or a retry
/// waiting for the retry budget.
///
/// The bus is the one owner of this fact. A service that keeps its own record of its jobs
/// (errorbusd's store) asks ``ErrorBus/heldJobs(service:)`` or ``ErrorBus/heldJob(id:service:)``
/// rather than mirroring each parking: a job can park, be released and park again under another
/// incident without its service hearing of it.
public struct HeldJob: Sendable, Hashable {
    public var job: Job
    /// The incident it is parked under; `nil` while its retry waits for the retry budget.
    public var incident: IncidentID?
    /// Whether it is held for a failure of its own: it failed under its incident itself, or its
    /// incident is its own (it fails while others succeed), rather than merely waiting behind
    /// an incident. What a limit on how much may wait gives up first.
    public var hasFailed: Bool
    /// Its runs since it was submitted, all of which failed: what its owner adds to the attempts
    /// it recorded before.
    public var runs: Int

    public init(job: Job, incident: IncidentID?, hasFailed: Bool = false, runs: Int = 0) {
        self.job = job
        self.incident = incident
        self.hasFailed = hasFailed
        self.runs = runs
    }
}
