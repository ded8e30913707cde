/// What ``JobStore/enqueue(_:)`` did with each new job.
public struct EnqueueResult: Sendable, Equatable {
    /// A new job whose id the store already knew.
    public struct Duplicate: Sendable, Equatable {
        /// The job the caller tried to enqueue (its path may differ from the known job's).
        public var new: NewJob
        /// The job the store already holds under that id, as it stands.
        public var existing: OutboxJob

        public init(new: NewJob, existing: OutboxJob) {
            self.new = new
            self.existing = existing
        }
    }

    /// The jobs inserted, as stored (`queued`), in the order given.
    public var inserted: [OutboxJob]
    /// The jobs not inserted because their id was known, in the order given. A job given twice in
    /// one call is inserted once and listed here once.
    public var duplicates: [Duplicate]

    public init(inserted: [OutboxJob], duplicates: [Duplicate]) {
        self.inserted = inserted
        self.duplicates = duplicates
    }

    /// The new jobs whose content the API already has: their files are duplicates to remove.
    public var alreadyDelivered: [NewJob] {
        duplicates.filter { $0.existing.state == .delivered }.map(\.new)
    }
}
