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
    /// What each service's latest runs at each scope came to: how much of its work the scope
    /// refuses.
    public var refusals: [ScopeRefusals] = []
    /// Whether the bus's ``ErrorBus/run()`` is running (policies only progress while it is).
    public var isRunning: Bool
}

/// What one service's latest runs at one scope came to: the runs recorded (at most the latest
/// 128, those of jobs set aside on their own left out) and how many of them failed in a way that
/// may be the scope's (`unreachable`, `transient`, `rateLimited`).
public struct ScopeRefusals: Sendable, Equatable {
    public var service: String
    public var scope: String
    public var runs: Int
    public var failures: Int

    public init(service: String, scope: String, runs: Int, failures: Int) {
        self.service = service
        self.scope = scope
        self.runs = runs
        self.failures = failures
    }

    /// The share of the runs that failed, 0 without runs.
    public var share: Double { runs == 0 ? 0 : Double(failures) / Double(runs) }
}
