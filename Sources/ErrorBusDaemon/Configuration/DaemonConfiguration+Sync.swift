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
            maxFileSize: Int64 = 100 * 1_024 * 1_024,
            rescanInterval: Duration = .seconds(30),
            settleTime: Duration = .seconds(2)
        ) {
            self.outbox = outbox
            self.afterDelivery = afterDelivery
            self.concurrency = concurrency
            self.maxFileSize = maxFileSize
            self.rescanInterval = rescanInterval
            self.settleTime = settleTime
        }
    }
}
