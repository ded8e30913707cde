extension DaemonConfiguration {
    /// The outbox uploader (`sync.*`).
    package struct Sync: Sendable, Equatable {
        /// `sync.outbox`: the directory whose files are uploaded. Default
        /// `/var/spool/errorbusd/outbox`.
        package var outbox: String
        /// `sync.after-delivery` (with `sync.sent-directory`): what happens to a file once the API
        /// has it. Default ``AfterDelivery/delete``.
        package var afterDelivery: AfterDelivery
        /// `sync.concurrency`: at most this many uploads at once, 1…1024. Default 16.
        package var concurrency: Int
        /// `sync.parked-in-memory`: while an incident holds uploads back, at most this many of
        /// sync's jobs wait parked in the bus's memory; the others wait in the store's queue,
        /// which costs no memory, until the incident ends. Default 1,000.
        package var parkedInMemory: Int
        /// `sync.max-file-size`: larger files are not uploaded but dead-lettered, in bytes.
        /// Default 100 MiB.
        package var maxFileSize: Int64
        /// `sync.rescan-interval`: how often the outbox is listed again, for files whose
        /// notification was missed. Default 30 s.
        package var rescanInterval: Duration
        /// `sync.settle-time`: a file found by a rescan is taken only once it has not been
        /// modified for this long, so half-written files are left alone; such a file is looked
        /// at again this long after. Default 2 s.
        package var settleTime: Duration
        /// `sync.max-age`: a job queued longer ago than this is set aside as a dead letter instead
        /// of being uploaded (an API that rejects old data), at its next attempt. Default none.
        package var maxAge: Duration?
        /// `sync.bandwidth`: the rate upload bodies take together, or a timetable of rates.
        /// Default no limit.
        package var bandwidth: Bandwidth = .unlimited
        /// `sync.backlog.*`: how much may wait for delivery, and what happens beyond.
        package var backlog: Backlog
        /// `sync.dead-letters.*`: how many dead letters are kept, and for how long.
        package var deadLetters: DeadLetters
        /// `sync.delivered-retention`: delivered jobs are forgotten this long after their
        /// delivery, so that the store does not grow by a row per file for ever (discarded ones
        /// stay: their files are still in the outbox); a copy of
        /// content delivered longer ago is uploaded again (the API absorbs it by its idempotency
        /// key). `nil`: kept for ever. Default 30 days.
        package var deliveredRetention: Duration?

        /// The bounds of the backlog (queued jobs and those in flight or held by the bus).
        package struct Backlog: Sendable, Equatable {
            /// `sync.backlog.max-bytes`: at most this many bytes of files wait. Default none.
            package var maxBytes: Int64?
            /// `sync.backlog.max-files`: at most this many files wait. Default none.
            package var maxFiles: Int?
            /// `sync.backlog.overflow`: what happens to work beyond the bounds. Default
            /// ``Overflow/rejectNew``.
            package var overflow: Overflow

            package enum Overflow: String, Sendable, Equatable, CaseIterable {
                /// `reject-new`: new files stay in the outbox, not taken, until there is room.
                case rejectNew = "reject-new"
                /// `drop-oldest`: the oldest queued jobs are set aside as dead letters to make room.
                case dropOldest = "drop-oldest"
            }

            package init(maxBytes: Int64? = nil, maxFiles: Int? = nil, overflow: Overflow = .rejectNew) {
                self.maxBytes = maxBytes
                self.maxFiles = maxFiles
                self.overflow = overflow
            }

            /// Whether any bound is set.
            package var isBounded: Bool { maxBytes != nil || maxFiles != nil }
            /// Whether new files are left in the outbox when there is no room.
            package var rejectsNew: Bool { isBounded && overflow == .rejectNew }
            /// Whether the oldest files waiting are set aside to make room.
            package var dropsOldest: Bool { isBounded && overflow == .dropOldest }
        }

        /// The retention of dead letters: beyond it the oldest are given up, their files removed.
        package struct DeadLetters: Sendable, Equatable {
            /// `sync.dead-letters.max-count`: at most this many. Default 10,000.
            package var maxCount: Int
            /// `sync.dead-letters.max-age`: none set aside longer ago than this. Default 90 days.
            package var maxAge: Duration?

            package init(maxCount: Int = 10_000, maxAge: Duration? = .seconds(90 * 86_400)) {
                self.maxCount = maxCount
                self.maxAge = maxAge
            }
        }

        /// Where delivered files go with `after-delivery: move` when `sync.sent-directory` is not
        /// set.
        package static let defaultSentDirectory = "/var/spool/errorbusd/sent"

        /// What happens to an outbox file once it was delivered.
        package enum AfterDelivery: Sendable, Equatable {
            /// `after-delivery: delete`: the file is removed.
            case delete
            /// `after-delivery: move`: the file is moved into `sent-directory` (default
            /// ``DaemonConfiguration/Sync/defaultSentDirectory``).
            case move(to: String)
        }

        /// Creates the section; every setting defaults to the built-in default.
        package init(
            outbox: String = "/var/spool/errorbusd/outbox",
            afterDelivery: AfterDelivery = .delete,
            concurrency: Int = 16,
            parkedInMemory: Int = 1_000,
            maxFileSize: Int64 = 100 * 1_024 * 1_024,
            rescanInterval: Duration = .seconds(30),
            settleTime: Duration = .seconds(2),
            maxAge: Duration? = nil,
            backlog: Backlog = Backlog(),
            deadLetters: DeadLetters = DeadLetters(),
            deliveredRetention: Duration? = .seconds(30 * 86_400)
        ) {
            self.outbox = outbox
            self.afterDelivery = afterDelivery
            self.concurrency = concurrency
            self.parkedInMemory = parkedInMemory
            self.maxFileSize = maxFileSize
            self.rescanInterval = rescanInterval
            self.settleTime = settleTime
            self.maxAge = maxAge
            self.backlog = backlog
            self.deadLetters = deadLetters
            self.deliveredRetention = deliveredRetention
        }
    }
}
