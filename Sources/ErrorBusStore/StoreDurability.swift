/// What a committed change survives: the SQLite `synchronous` setting of the store's writer.
///
/// Both settings survive a crash of the process (`kill -9`, a trap, the OOM killer): in WAL mode
/// a commit has been written to the `-wal` file when it returns, and the kernel keeps the data of
/// a dead process. They differ on a crash of the machine (power loss, kernel panic):
///
/// - ``processCrash`` (`synchronous=NORMAL`, the default): the WAL is synced to disk only when it
///   is checkpointed into the database (every ~1,000 pages, and at ``JobStore/close()``). After a
///   power loss the database is consistent but may have lost the last changes since the last
///   checkpoint: new jobs (their files are still in the outbox and are enqueued again by the
///   outbox scan at start) and state changes (a delivered job may be queued again and uploaded
///   once more, which its idempotency key makes harmless). A job whose file the service had
///   already removed after delivery may then come back queued without its file:
///   ``JobStore/reconcileFiles(fileExists:)`` finds and discards those at start.
/// - ``powerLoss`` (`synchronous=FULL`): every commit syncs the WAL (one `fdatasync`), so a
///   commit that returned survives power loss too. Costs one sync per transaction: the batched
///   ``JobStore/markDelivered(_:)-(String)`` shares one between every completion of a batch, but
///   each single-job change (park, requeue, dead-letter) pays a whole one.
package struct StoreDurability: Sendable, Hashable, CustomStringConvertible {
    enum Level: String, Sendable, Hashable {
        case normal = "NORMAL"
        case full = "FULL"
    }

    let level: Level

    private init(_ level: Level) { self.level = level }

    /// Commits survive a crash of the process; the last ones may be lost on power loss.
    package static let processCrash = StoreDurability(.normal)
    /// Commits survive a crash of the process and of the machine.
    package static let powerLoss = StoreDurability(.full)

    /// The value of `PRAGMA synchronous`.
    var synchronousPragma: String { level.rawValue }

    package var description: String {
        switch level {
        case .normal: "processCrash (synchronous=NORMAL)"
        case .full: "powerLoss (synchronous=FULL)"
        }
    }
}
