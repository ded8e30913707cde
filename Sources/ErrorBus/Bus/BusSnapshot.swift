/// The bus's state for a status display: open incidents, parked work, the retry budget, each
/// scope's concurrency.
public struct BusSnapshot: Sendable {
    /// Open incidents, oldest first.
    public var incidents: [IncidentSnapshot]
    /// The most recently resolved incidents, newest last.
    public var recentlyResolved: [IncidentSnapshot]
    /// Jobs parked under incidents now.
    public var parkedJobs: Int
    /// Parked jobs by service and by the category of the incident holding them.
    public var parkedByService: [String: [ErrorCategory.Kind: Int]]
    /// Retries waiting for the retry budget.
    public var waitingForBudget: Int
    /// Jobs the bus holds by service: parked under incidents, or waiting for the retry budget.
    public var heldByService: [String: Int]
    /// Tokens in the retry budget.
    public var retryBudgetTokens: Double
    /// Jobs stopped because parking was full, since the bus started.
    public var overflowedJobs: Int
    /// Each scope's adaptive concurrency limit, by scope name.
    public var concurrency: [ScopeConcurrency]
    /// Whether the bus's ``ErrorBus/run()`` is running (policies only progress while it is).
    public var isRunning: Bool
}
