import ErrorBusUnits

/// A run of a job's operation took longer than ``ErrorBusConfiguration/attemptTimeout``: the bus
/// cancelled it, and counts it a `transient` failure of the job's service at its scope (a server
/// that stopped answering in the middle of a request).
public struct AttemptTimedOut: CategorizedError {
    /// The job whose run was cut off.
    public var job: Job
    /// The limit it ran into.
    public var limit: Duration

    public init(job: Job, limit: Duration) {
        self.job = job
        self.limit = limit
    }

    public var category: ErrorCategory { .transient }
    public var cause: String { "attemptTimedOut" }
    public var operatorText: OperatorText {
        OperatorText(
            title: "Run timed out",
            message: "A run of \(job.shownName) did not end within \(DurationText.format(limit)) (the bus's attemptTimeout), and was cancelled.",
            next: "It is retried like any transient failure."
        )
    }
}
