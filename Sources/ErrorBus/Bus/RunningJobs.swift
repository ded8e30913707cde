/// The runs under way, by job, so that a job can be cancelled while it runs: the cancellation
/// takes effect when the run ends (a run that succeeds stands). Kept under a lock beside the
/// bus, as admission is: a run starts and ends without a hop to the actor.
struct RunningJobs {
    private struct Key: Hashable {
        let service: String
        let id: String
    }

    /// The command whose run is under way, by job.
    private var runs: [Key: UInt64] = [:]
    /// The commands to stop when their run ends.
    private var cancelled: Set<UInt64> = []

    mutating func start(_ job: Job, serial: UInt64) {
        runs[Key(service: job.service, id: job.id)] = serial
    }

    /// Ends a run; returns whether it was asked to stop meanwhile.
    mutating func finish(_ job: Job, serial: UInt64) -> Bool {
        let key = Key(service: job.service, id: job.id)
        if runs[key] == serial { runs[key] = nil }
        return !cancelled.isEmpty && cancelled.remove(serial) != nil
    }

    /// Asks the job's run under way, if any, to stop when it ends; returns whether one was.
    mutating func cancel(service: String, id: String) -> Bool {
        guard let serial = runs[Key(service: service, id: id)] else { return false }
        cancelled.insert(serial)
        return true
    }
}
