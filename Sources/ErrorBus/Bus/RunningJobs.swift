/// The runs under way, by job, so that a job can be cancelled while it runs: the cancellation
/// takes effect when the run ends (a run that succeeds stands). Kept under a lock beside the
/// bus, as admission is: a run starts and ends without a hop to the actor.
///
/// Each run has a token of its own, not its command's: a command's failed run parks it, and
/// its incident may take it as canary before that run has finished; a cancellation is the
/// canary's, not the ending run's.
struct RunningJobs {
    fileprivate struct Key: Hashable {
        let service: String
        let id: String
    }

    /// One run of a job.
    struct Run: Hashable {
        fileprivate let key: Key
        fileprivate let token: UInt64
    }

    /// The run under way, by job: the latest started.
    private var runs: [Key: UInt64] = [:]
    /// The runs to stop when they end.
    private var cancelled: Set<UInt64> = []
    private var nextToken: UInt64 = 0

    mutating func start(_ job: Job) -> Run {
        nextToken &+= 1
        let key = Key(service: job.service, id: job.id)
        runs[key] = nextToken
        return Run(key: key, token: nextToken)
    }

    /// Ends a run; returns whether it was asked to stop meanwhile.
    mutating func finish(_ run: Run) -> Bool {
        if runs[run.key] == run.token { runs[run.key] = nil }
        return !cancelled.isEmpty && cancelled.remove(run.token) != nil
    }

    /// Asks the job's run under way, if any, to stop when it ends; returns whether one was.
    mutating func cancel(service: String, id: String) -> Bool {
        guard let token = runs[Key(service: service, id: id)] else { return false }
        cancelled.insert(token)
        return true
    }
}
