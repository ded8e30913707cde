/// What the bus decided of one run of a job whose owner keeps it in a durable queue of its own
/// (``ErrorBus/run(_:operation:)``): the owner records it, and the bus keeps nothing of the job.
public enum Verdict: Sendable {
    /// The operation ran and succeeded, in `latency`.
    case succeeded(latency: Duration)
    /// The job waits on an open incident, parked under it in its owner's queue, until the bus
    /// asks for it as the incident's canary or releases the incident
    /// (``ParkedJobSource``). `failed`: it ran and met the incident's cause, as opposed to merely
    /// being held back behind it; an incident tries jobs that merely wait first, and releases
    /// them first.
    case parked(IncidentID, failed: Bool)
    /// The job runs again after `delay`, and nothing holds it meanwhile: its scope refused it
    /// while it served others (the incident paces), or a responder's retry waits for the retry
    /// budget. The owner keeps it queued, not before then.
    case retry(after: Duration)
    /// The job ended without success: dead-lettered, handled by a responder, cancelled, or the
    /// bus stopped (``JobStopped/reason``).
    case stopped(JobStopped)
}

/// The owner of a durable queue of jobs, asked by the bus for the jobs parked under an incident
/// (``Verdict/parked(_:failed:)``): the same shape as a ``ReachabilityProbe`` or an
/// ``Authenticator``, registered per service with ``ErrorBus/setParkedJobSource(_:forService:)``.
///
/// The bus keeps no memory per parked job of such a service, whatever their number: it knows
/// that an incident has jobs parked with a source, and asks the source when the incident's
/// policy needs one.
public protocol ParkedJobSource: Sendable {
    /// Runs one job parked under `incident` as its canary, and records what became of it: takes
    /// the next one (those that merely wait first, then those that failed under it, oldest
    /// first), runs it with `canary.run(_:operation:)`, records the verdict as for any run, and
    /// returns the verdict. `nil` when no job is parked under `incident`.
    func runOne(parkedUnder incident: IncidentID, as canary: CanaryRun) async -> Verdict?

    /// The cause of `incident` is gone: every job parked under it may run again, and goes back
    /// to the owner's queue, where the bus's admission paces it as new work.
    ///
    /// Returns once those jobs have run, each verdict recorded, and so have the jobs queued
    /// before them (among them those the incident paced, ``Verdict/retry(after:)``); a job parked
    /// again counts as run. The bus lets the incident settle from then, as it does once its own
    /// released jobs ran: the same cause met by a released job is the same incident, however
    /// long the owner's queue took to reach it. Returns at once when the owner stops.
    func release(_ incident: IncidentID) async
}

/// One run of a parked job as its incident's canary, handed to
/// ``ParkedJobSource/runOne(parkedUnder:as:)``: its outcome is the incident's next step.
public struct CanaryRun: Sendable {
    let bus: ErrorBus
    /// The incident whose canary this is.
    public let incident: IncidentID

    /// Runs `job`'s operation as the canary of ``incident``, and returns the bus's verdict.
    public func run(_ job: Job, operation: @escaping @Sendable () async throws -> Void) async -> Verdict {
        await bus.run(bus.durableCommand(job, operation: operation), .canary(incident))
    }
}
