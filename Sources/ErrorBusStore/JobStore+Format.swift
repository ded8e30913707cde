import ErrorBusSupport
import GRDB
package import Logging

extension JobStore {
    /// The migrations of the store in `directory` that errorbusd `release` cannot read, newest
    /// first: empty when that release reads the store as it is (or there is no store yet).
    ///
    /// Reads without taking the directory's lock, so that a package's maintainer script can ask
    /// while errorbusd runs.
    ///
    /// - Throws: ``StoreError``, ``StoreError/isNewer`` when an errorbusd newer than this one
    ///   wrote the store (this one cannot say what an older one needs, nor undo it).
    package static func requirements(directory: String, newerThan release: String) throws(StoreError) -> [String] {
        let path = directory + "/" + databaseFileName
        let action = "reading the job store's format"
        do {
            guard try SystemCall.stat(path) != nil else { return [] }
        } catch {
            throw StoreError(systemCall: error, action: action)
        }
        do {
            var configuration = Configuration()
            configuration.readonly = true
            let queue = try DatabaseQueue(path: path, configuration: configuration)
            defer { try? queue.close() }
            return try queue.read { db in
                try refuseUnknownRequirements(db, path: path)
                return try StoreFormat.requirements(db, newerThan: release).map(\.migration)
            }
        } catch {
            throw StoreError.classifying(error, database: path, directory: directory, action: action)
        }
    }

    /// Turns the store in `directory` back into a form errorbusd `release` reads: undoes, in one
    /// transaction, each migration of ``StoreFormat/requirements`` that `release` predates, and
    /// returns their identifiers, newest first (empty when there was nothing to undo). What only
    /// adds stays: an older errorbusd ignores it, and a newer one finds it again.
    ///
    /// Takes the directory's lock, so errorbusd must be stopped.
    ///
    /// - Throws: ``StoreError``: ``StoreError/isInUse`` while an errorbusd runs on the directory,
    ///   ``StoreError/isNewer`` when an errorbusd newer than this one wrote the store.
    package static func downgrade(directory: String, to release: String, logger: Logger) throws(StoreError) -> [String] {
        let path = directory + "/" + databaseFileName
        let action = "turning the job store back for errorbusd \(release)"
        let lock: StoreLock
        do {
            lock = try StoreLock(directory: directory)
            guard try SystemCall.stat(path) != nil else {
                lock.release()
                return []
            }
        } catch {
            throw StoreError(systemCall: error, action: action)
        }
        defer { lock.release() }
        do {
            let queue = try DatabaseQueue(path: path)
            defer { try? queue.close() }
            let undone = try queue.write { db in
                try refuseUnknownRequirements(db, path: path)
                let requirements = try StoreFormat.requirements(db, newerThan: release)
                for requirement in requirements {
                    try requirement.undo(db)
                    try db.execute(sql: "DELETE FROM grdb_migrations WHERE identifier = ?", arguments: [requirement.migration])
                    try db.execute(sql: "DELETE FROM store_format WHERE migration = ?", arguments: [requirement.migration])
                }
                return requirements.map(\.migration)
            }
            // Into the database file itself, so that an errorbusd that cannot read this one's WAL
            // settings finds everything there.
            _ = try queue.writeWithoutTransaction { db in try db.checkpoint(.truncate) }
            if !undone.isEmpty {
                logger.notice(
                    "Job store turned back for errorbusd \(release)",
                    metadata: ["path": "\(path)", "undone": "\(undone.joined(separator: ", "))"]
                )
            }
            return undone
        } catch {
            throw StoreError.classifying(error, database: path, directory: directory, action: action)
        }
    }

    /// Throws ``StoreError/isNewer`` when `db` carries a requirement this errorbusd does not know.
    private static func refuseUnknownRequirements(_ db: Database, path: String) throws {
        let known = Set(StoreSchema.migrator.migrations)
        if let unknown = try StoreFormat.unknownRequirements(db, known: known) {
            throw StoreError.newer(path: path, writer: unknown.writer, requirements: unknown.requirements, reader: nil)
        }
    }
}
