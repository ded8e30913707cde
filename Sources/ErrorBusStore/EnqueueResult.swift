/// What ``JobStore/enqueue(_:)`` did with each new job.
package struct EnqueueResult: Sendable, Equatable {
    /// A new job whose id the store already knew.
    package struct Duplicate: Sendable, Equatable {
        /// The job the caller tried to enqueue (its path may differ from the known job's).
        package var new: OutboxFile
        /// The job the store already holds under that id, as it stands.
        package var existing: OutboxJob

        package init(new: OutboxFile, existing: OutboxJob) {
            self.new = new
            self.existing = existing
        }
    }

    /// The jobs inserted, as stored (`queued`), in the order given.
    package var inserted: [OutboxJob]
    /// The jobs not inserted because their id was known, in the order given. A job given twice in
    /// one call is inserted once and listed here once.
    package var duplicates: [Duplicate]

    /// The discarded jobs whose content arrived again and is queued anew (among ``inserted``),
    /// as they were.
    package var replacedDiscarded: [OutboxJob]

    /// The delivered jobs whose file was dropped again after the delivery and is queued anew
    /// (among ``inserted``), as they were: only when asked (``JobStore/enqueue(_:redeliver:)``).
    package var replacedDelivered: [OutboxJob]

    package init(inserted: [OutboxJob], duplicates: [Duplicate], replacedDiscarded: [OutboxJob] = [], replacedDelivered: [OutboxJob] = []) {
        self.inserted = inserted
        self.duplicates = duplicates
        self.replacedDiscarded = replacedDiscarded
        self.replacedDelivered = replacedDelivered
    }

    /// The new jobs whose content the API already has: their files are duplicates to remove.
    package var alreadyDelivered: [OutboxFile] {
        duplicates.filter { $0.existing.state == .delivered }.map(\.new)
    }
}
