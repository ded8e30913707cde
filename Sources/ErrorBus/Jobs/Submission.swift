/// What happened to a job handed to ``ErrorBus/submit(_:operation:completion:)`` by the time the
/// call returned.
public enum Submission: Sendable {
    /// The operation ran and succeeded. The completion is not called.
    case completed
    /// The job ended without success. The completion is not called.
    case stopped(JobStopped)
    /// The bus holds the job: parked under an incident (or, with `nil`, waiting for the retry
    /// budget). The completion will be called exactly once with the job's final outcome.
    case parked(IncidentID?)
}

/// The final outcome of a job the bus held.
public enum JobOutcome: Sendable {
    /// A later run of the operation succeeded.
    case succeeded
    /// The job ended without success.
    case stopped(JobStopped)
}
