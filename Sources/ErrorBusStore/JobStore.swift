package import ErrorBusSupport
import Foundation
import GRDB
import Glibc
package import Logging
import Synchronization

/// errorbusd's durable state: the outbox jobs, the incident history and the loader's resource
/// metadata, in one SQLite database, `errorbusd.sqlite` in the state directory.
///
/// ## Durability
///
/// The database is in WAL mode, behind a GRDB `DatabasePool` (one writer connection, up to five
/// readers that never wait for the writer). Every method that changes something returns once
/// its transaction is committed, so a `kill -9` at any later moment loses none of it (the crash
/// tests kill a real process in a loop to check this). What a crash of the *machine* may undo
/// depends on ``StoreDurability``; the default, ``StoreDurability/processCrash``, may roll back
/// the last changes on power loss, which the outbox scan and ``reconcileFiles(fileExists:)``
/// repair at start. ``close()`` checkpoints the WAL into the database and syncs it, so after a
/// graceful shutdown everything is on disk.
///
/// An exclusive lock on `errorbusd.lock` keeps a second daemon away from the same directory.
///
/// ## Threads
///
/// `JobStore` is `Sendable`: call it from any task, actor or thread. GRDB serializes the writes
/// on its writer queue and runs reads concurrently on the reader connections. It is a class
/// rather than an actor because the database already serializes what must be serialized; an
/// actor would queue reads behind writes and add a hop to every call.
///
/// The synchronous methods block their thread for one short transaction (tens of microseconds,
/// see the measurements in BENCHMARKS.md); call them from actors and tasks, never from an
/// event loop. The methods the sync service calls at upload rate are asynchronous, so that no
/// thread of the cooperative pool waits for the writer: ``enqueue(_:)`` and
/// ``claimQueued(limit:)`` suspend the caller until their transaction is committed, and
/// ``markDelivered(_:)-(String)`` until its completion's batch is.
///
/// ## Errors
///
/// Every method throws a ``StoreError`` whose description an operator can act on; its
/// ``StoreError/isFatal`` tells the daemon when to pause a service and report a `fatal` failure
/// (disk full, read-only, permission denied, damaged database).
package final class JobStore: Sendable {
    /// The database's file name in the state directory.
    package static let databaseFileName = "errorbusd.sqlite"

    /// How long recorded deliveries gather into one transaction unless the caller says: at
    /// upload rate, 5 ms made batches of about 28 instead of 3.4, and cut the writer's CPU per
    /// file by a third (BENCHMARKS.md).
    package static let defaultDeliveryGatherTime: Duration = .milliseconds(5)

    /// The state directory.
    package let directory: String
    /// The database file.
    package let path: String
    /// What a committed change survives.
    package let durability: StoreDurability

    let pool: DatabasePool
    let logger: Logger
    let deliveries: DeliveryBatcher
    private let lock: StoreLock
    private let isOpen = Atomic(true)
    /// Where the dates it records come from.
    package let clock: WallClock

    /// Now, at the store's precision.
    func storeNow() -> Date {
        clock.now().atStorePrecision
    }

    /// Opens the store in `directory` (created with mode 0700 if missing), creating or migrating
    /// the database as needed.
    ///
    /// - Parameters:
    ///   - directory: the state directory, e.g. `$STATE_DIRECTORY`.
    ///   - durability: what a committed change survives; see ``StoreDurability``.
    ///   - deliveryGatherTime: how long ``markDelivered(_:)-(String)`` lets completions gather
    ///     into one transaction; zero commits each batch as soon as the writer is free.
    ///   - clock: where the dates it records come from (``WallClock/system``; a test's moves
    ///     with its manual clock).
    ///   - logger: where the store reports opening, migrations, repairs and closing.
    ///   - version: the version of the errorbusd opening it, recorded as the store's writer and
    ///     named to an older errorbusd that cannot read it; `nil` records nothing.
    /// - Throws: ``StoreError`` — e.g. ``StoreError/isInUse`` when another process holds the
    ///   directory, ``StoreError/isCorrupt`` when the file is not a usable database,
    ///   ``StoreError/isNewer`` when a newer errorbusd wrote it in a form this one cannot read.
    package init(
        directory: String,
        durability: StoreDurability = .processCrash,
        deliveryGatherTime: Duration = JobStore.defaultDeliveryGatherTime,
        clock: WallClock = .system,
        logger: Logger,
        version: String? = nil
    ) throws(StoreError) {
        self.clock = clock
        let directory = directory.count > 1 && directory.hasSuffix("/") ? String(directory.dropLast()) : directory
        let path = directory + "/" + Self.databaseFileName
        let action = "opening the job store"

        let lock: StoreLock
        do {
            try Self.prepareDirectory(directory)
            lock = try StoreLock(directory: directory)
            if try SystemCall.stat(path) != nil {
                try SystemCall.access(path, R_OK | W_OK)
            }
        } catch {
            throw StoreError(systemCall: error, action: action)
        }

        var configuration = Configuration()
        configuration.label = "errorbusd.store"
        // GRDB's queues default to user-initiated. On Linux, libdispatch gives each worker thread
        // of such a queue a nice value below 0 (-2), which an unprivileged process may not set:
        // every new writer or reader thread then logged "Failed to set thread priority for
        // worker thread … errno=13". The store is errorbusd's own work, at the default priority
        // like the rest of it (nice 0).
        configuration.qos = .default
        // Only this process writes; a wait means someone is inspecting the file with sqlite3.
        configuration.busyMode = .timeout(5)
        configuration.prepareDatabase { db in
            if !db.configuration.readonly {
                // Bound the -wal file left after a checkpoint (by default it keeps its largest size).
                try db.execute(sql: "PRAGMA journal_size_limit = 16777216")
            }
        }

        let pool: DatabasePool
        let applied: [String]
        do {
            pool = try DatabasePool(path: path, configuration: configuration)
            // Per connection, and only the writer writes. GRDB sets NORMAL while opening, before
            // anything is written; this is the setting every later commit runs with.
            try pool.writeWithoutTransaction { db in
                try db.execute(sql: "PRAGMA synchronous = \(durability.synchronousPragma)")
            }
            let migrator = StoreSchema.migrator
            let before = try pool.read { db in try migrator.appliedIdentifiers(db) }
            let unknown = try pool.read { db in try StoreFormat.unknownRequirements(db, known: Set(migrator.migrations)) }
            if let unknown {
                throw StoreError.newer(path: path, writer: unknown.writer, requirements: unknown.requirements, reader: version)
            }
            try migrator.migrate(pool)
            try pool.write { db in try StoreFormat.record(db, version: version, at: clock.now()) }
            applied = migrator.migrations.filter { !before.contains($0) }
            if try pool.read({ db in try migrator.hasBeenSuperseded(db) }) {
                logger.warning(
                    "The job store was migrated by a newer errorbusd; this one ignores what it does not know",
                    metadata: ["path": "\(path)"]
                )
            }
        } catch {
            throw StoreError.classifying(error, database: path, directory: directory, action: action)
        }

        self.directory = directory
        self.path = path
        self.durability = durability
        self.pool = pool
        self.deliveries = DeliveryBatcher(gatherTime: deliveryGatherTime)
        self.logger = logger
        self.lock = lock

        logger.info(
            "Job store opened",
            metadata: [
                "path": "\(path)",
                "durability": "\(durability)",
                "migrations": "\(applied.isEmpty ? "none" : applied.joined(separator: ", "))",
            ]
        )
    }

    /// Commits every completion handed to ``markDelivered(_:)-(String)``, checkpoints the WAL into
    /// the database (synced to disk), closes the connections and drops the directory lock. Later
    /// calls throw ``StoreError/isClosed``; closing twice does nothing.
    package func close() async throws(StoreError) {
        guard isOpen.exchange(false, ordering: .acquiringAndReleasing) else { return }
        defer { lock.release() }
        let action = "closing the job store"
        do {
            // Queued after every batch already scheduled on the writer, so it runs after them;
            // it commits the completions still gathering.
            try await pool.writeWithoutTransaction { db in
                self.commitDeliveries(db)
                do {
                    try db.checkpoint(.truncate)
                } catch {
                    // Readers can hold it back; the next start checkpoints again.
                }
            }
            try pool.close()
        } catch {
            throw StoreError.classifying(error, database: path, directory: directory, action: action)
        }
        logger.info("Job store closed", metadata: ["path": "\(path)"])
    }

    /// Runs SQLite's `PRAGMA integrity_check`: `["ok"]` when the database is sound, otherwise
    /// what is wrong with it.
    package func checkIntegrity() throws(StoreError) -> [String] {
        try read("checking the database") { db in
            try String.fetchAll(db, sql: "PRAGMA integrity_check")
        }
    }

    // MARK: Database access

    /// Runs `body` in a write transaction; its error, if any, becomes a ``StoreError``.
    func write<T>(_ action: @autoclosure () -> String, _ body: (Database) throws -> T) throws(StoreError) -> T {
        guard isOpen.load(ordering: .acquiring) else { throw closedError(action()) }
        do {
            return try pool.writeWithoutTransaction { db in try db.inPreparedTransaction { try body(db) } }
        } catch {
            throw classify(error, action: action())
        }
    }

    /// Runs `body` in a write transaction, suspending the caller (no thread waits) until the
    /// writer queue has run and committed it; its error, if any, becomes a ``StoreError``.
    func writeSuspending<T: Sendable>(
        _ action: @autoclosure () -> String,
        _ body: @Sendable (Database) throws -> T
    ) async throws(StoreError) -> T {
        guard isOpen.load(ordering: .acquiring) else { throw closedError(action()) }
        do {
            return try await pool.writeWithoutTransaction { db in try db.inPreparedTransaction { try body(db) } }
        } catch {
            throw classify(error, action: action())
        }
    }

    /// Runs `body` on a reader connection; its error, if any, becomes a ``StoreError``.
    func read<T: Sendable>(
        _ action: @autoclosure () -> String,
        _ body: @Sendable (Database) throws -> T
    ) throws(StoreError) -> T {
        guard isOpen.load(ordering: .acquiring) else { throw closedError(action()) }
        do {
            return try pool.read(body)
        } catch {
            throw classify(error, action: action())
        }
    }

    /// Whether ``close()`` has been called.
    var isClosed: Bool { !isOpen.load(ordering: .acquiring) }

    func classify(_ error: any Error, action: String) -> StoreError {
        if isClosed, error is DatabaseError { return closedError(action) }
        return StoreError.classifying(error, database: path, directory: directory, action: action)
    }

    func closedError(_ action: String) -> StoreError {
        StoreError(.closed, path: path, action: action, detail: "closed")
    }

    /// Creates the state directory with mode 0700 when it is missing.
    private static func prepareDirectory(_ directory: String) throws(SystemCallError) {
        if let isDirectory = try SystemCall.isDirectory(directory) {
            guard isDirectory else {
                throw SystemCallError(call: "stat", errnoCode: ENOTDIR, path: directory)
            }
        } else {
            do {
                try SystemCall.mkdir(directory, mode: 0o700)
            } catch where error.errnoCode == EEXIST {
                // Created meanwhile by someone else: fine.
            }
        }
        try SystemCall.access(directory, R_OK | W_OK | X_OK)
    }
}
