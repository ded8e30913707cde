import ErrorBusSupport
import Foundation
import GRDB

/// What an errorbusd must know to read a store, and the way back for one that does not.
///
/// Most migrations only add (a table, a column with a default, an index): an older errorbusd
/// reads a store a newer one migrated and ignores what it does not know. A migration that changes
/// how existing rows are written (`10 binary job keys`) is a *requirement*: an errorbusd without it
/// cannot read the store. The store lists the requirements it carries in `store_format`, with the
/// release that brought each, and the errorbusd that last opened it in `store_writer`, so that:
///
/// - an errorbusd that meets a requirement it does not know refuses the store with one line
///   naming the errorbusd that wrote it, instead of misreading it (``StoreError/isNewer``);
/// - a newer errorbusd can turn a store back for an older release
///   (`errorbusd --downgrade-store RELEASE`, ``JobStore/downgrade(directory:to:logger:)``), undoing
///   each requirement that release lacks, and can say beforehand whether a release reads the store
///   as it is (``JobStore/readableBy(directory:release:)``).
enum StoreFormat {
    /// A migration an errorbusd must know to read a store that has it, and how to undo it.
    struct Requirement: Sendable {
        /// The migration's identifier in `StoreSchema`.
        let migration: String
        /// The first release that has it.
        let release: String
        /// Turns the rows back to how an errorbusd without the migration writes them.
        let undo: @Sendable (Database) throws -> Void
    }

    /// Every requirement, oldest first. Append only, as migrations are.
    static let requirements: [Requirement] = [
        Requirement(migration: "10 binary job keys", release: "0.3.0") { db in
            try db.execute(sql: "UPDATE job SET id = lower(hex(id)) WHERE typeof(id) = 'blob'")
        },
        // errorbusd 0.3.0 knows no `parked` state: a row in it is not a job it can read (it
        // only queues such rows at its start, as builds before it left them). The parked jobs
        // are queued again, as sync releases them at its start: the incidents they waited on
        // ended with the errorbusd that stopped.
        Requirement(migration: "13 parked jobs", release: "0.4.0") { db in
            try db.execute(sql: "UPDATE job SET state = 'queued', incident = NULL, failedUnder = 0 WHERE state = 'parked'")
        },
    ]

    /// Creates the tables (`12 store format`).
    static func createTables(_ db: Database) throws {
        try db.execute(
            sql: """
                CREATE TABLE store_format (
                    migration TEXT PRIMARY KEY NOT NULL,
                    release TEXT NOT NULL
                ) WITHOUT ROWID;
                CREATE TABLE store_writer (
                    id INTEGER PRIMARY KEY CHECK (id = 1),
                    version TEXT NOT NULL,
                    openedAt INTEGER NOT NULL
                );
                """
        )
    }

    /// The requirements `db` carries that `known` (a migrator's identifiers) lacks, with the
    /// version that last wrote it; `nil` when this errorbusd can read it.
    static func unknownRequirements(_ db: Database, known: Set<String>) throws -> (requirements: [(migration: String, release: String)], writer: String?)? {
        guard try db.tableExists("store_format") else { return nil }
        let rows = try Row.fetchAll(db, sql: "SELECT migration, release FROM store_format ORDER BY release, migration")
        let unknown = rows.compactMap { row -> (migration: String, release: String)? in
            let migration: String = row["migration"]
            return known.contains(migration) ? nil : (migration, row["release"])
        }
        guard !unknown.isEmpty else { return nil }
        return (unknown, try writer(db))
    }

    /// The version of the errorbusd that last opened `db` to write, if one recorded it.
    static func writer(_ db: Database) throws -> String? {
        guard try db.tableExists("store_writer") else { return nil }
        return try String.fetchOne(db, sql: "SELECT version FROM store_writer WHERE id = 1")
    }

    /// After migrating: lists the requirements `db` carries and who wrote it.
    static func record(_ db: Database, version: String?, at now: Date) throws {
        let applied = Set(try String.fetchAll(db, sql: "SELECT identifier FROM grdb_migrations"))
        for requirement in requirements where applied.contains(requirement.migration) {
            try db.execute(
                sql: "INSERT OR IGNORE INTO store_format (migration, release) VALUES (?, ?)",
                arguments: [requirement.migration, requirement.release]
            )
        }
        if let version {
            try db.execute(
                sql: """
                    INSERT INTO store_writer (id, version, openedAt) VALUES (1, ?, ?)
                    ON CONFLICT (id) DO UPDATE SET version = excluded.version, openedAt = excluded.openedAt
                    """,
                arguments: [version, now.storeMilliseconds]
            )
        }
    }

    /// The requirements `db` carries that `release` predates, newest first.
    static func requirements(_ db: Database, newerThan release: String) throws -> [Requirement] {
        let applied = Set(try String.fetchAll(db, sql: "SELECT identifier FROM grdb_migrations"))
        return requirements.reversed().filter { requirement in
            applied.contains(requirement.migration) && ReleaseVersion(requirement.release) > ReleaseVersion(release)
        }
    }
}

/// A release's or a build's version (`0.3.0`, `0.3.0+4.g1a2b3c4d5e6f`), compared by its release
/// numbers: a build after a release counts as that release, since it reads what the release reads.
package struct ReleaseVersion: Comparable, Sendable, CustomStringConvertible {
    /// The dot-separated numbers before any `+` or `-` (`[0, 3, 0]`).
    let numbers: [Int]
    package let description: String

    /// `nil` unless `text` starts with dot-separated numbers (`0.3`, `0.3.0`, `0.3.0+4.g…`).
    package init?(validating text: String) {
        let release = text.prefix { $0 != "+" && $0 != "-" && $0 != "~" }
        let parts = release.split(separator: ".", omittingEmptySubsequences: false)
        let numbers = parts.compactMap { Int($0) }
        guard !parts.isEmpty, numbers.count == parts.count else { return nil }
        self.numbers = numbers
        self.description = text
    }

    init(_ text: String) {
        self = ReleaseVersion(validating: text) ?? ReleaseVersion(numbers: [], description: text)
    }

    private init(numbers: [Int], description: String) {
        self.numbers = numbers
        self.description = description
    }

    package static func < (lhs: ReleaseVersion, rhs: ReleaseVersion) -> Bool {
        let count = max(lhs.numbers.count, rhs.numbers.count)
        let left = lhs.numbers + Array(repeating: 0, count: count - lhs.numbers.count)
        let right = rhs.numbers + Array(repeating: 0, count: count - rhs.numbers.count)
        return left.lexicographicallyPrecedes(right)
    }

    package static func == (lhs: ReleaseVersion, rhs: ReleaseVersion) -> Bool {
        !(lhs < rhs) && !(rhs < lhs)
    }
}
