/// Why the job store could not open, read or save errorbusd's state.
///
/// Its ``description`` is written for an operator: it says what happened, on which path, and
/// what to do. The `is…` properties let the daemon tell conditions it must report as a `fatal`
/// failure (the disk is full, the state directory is read-only or not ours, the database is
/// damaged) from passing trouble; ``StoreError`` is also a `CategorizedError`, so handing it to
/// the bus does the right thing.
package struct StoreError: Error, Sendable, CustomStringConvertible {
    enum Code: String, Sendable {
        /// No space left on the file system holding the state directory.
        case diskFull
        /// The file system or the database file is read-only.
        case readOnly
        /// The daemon's user may not read or write a path.
        case permissionDenied
        /// The database file is damaged or is not an SQLite database.
        case corrupt
        /// Another process holds the state directory's lock.
        case inUse
        /// A newer errorbusd wrote the database in a form this one cannot read.
        case newer
        /// The database could not be opened for another reason (missing parent directory…).
        case cannotOpen
        /// The store was closed.
        case closed
        /// Anything else SQLite or the system reported.
        case other
    }

    let code: Code
    /// The file or directory concerned.
    package let path: String
    /// What the store was doing, e.g. "saving new jobs".
    let action: String
    /// What SQLite or the system said, for the end of the description and the logs.
    let detail: String

    init(_ code: Code, path: String, action: String, detail: String) {
        self.code = code
        self.path = path
        self.action = action
        self.detail = detail
    }

    /// The directory `path` is in: `/var/lib/errorbusd` for `/var/lib/errorbusd/errorbusd.lock`.
    static func directory(of path: String) -> String {
        guard let slash = path.lastIndex(of: "/") else { return "." }
        return slash == path.startIndex ? "/" : String(path[..<slash])
    }

    /// The file system holding the state directory is full. Report as `fatal`; nothing already
    /// saved was lost, and writes succeed again once there is room.
    package var isDiskFull: Bool { code == .diskFull }
    /// The state directory's file system, or the database file, is read-only. Report as `fatal`.
    package var isReadOnly: Bool { code == .readOnly }
    /// The daemon's user may not use ``path``. Report as `fatal`.
    package var isPermissionDenied: Bool { code == .permissionDenied }
    /// The database is damaged or is not errorbusd's. Report as `fatal`; ``description`` says how
    /// to start again.
    package var isCorrupt: Bool { code == .corrupt }
    /// Another errorbusd uses the same state directory.
    package var isInUse: Bool { code == .inUse }
    /// A newer errorbusd wrote the database in a form this one cannot read; ``description``
    /// names it and the way back.
    package var isNewer: Bool { code == .newer }
    /// The store was closed (the daemon is stopping).
    package var isClosed: Bool { code == .closed }

    /// Whether the condition will not go away without an operator (or a freed disk): the service
    /// that met it should pause, and the daemon should report a `fatal` failure.
    package var isFatal: Bool {
        switch code {
        case .diskFull, .readOnly, .permissionDenied, .corrupt, .inUse, .newer, .cannotOpen: true
        case .closed, .other: false
        }
    }

    package var description: String {
        switch code {
        case .diskFull:
            "The file system holding \(path) is full: errorbusd could not finish \(action). "
                + "Free some space there; everything saved before is intact and work resumes once there is room. (\(detail))"
        case .readOnly:
            "\(path) is read-only (its file system is mounted read-only, or the file's mode forbids writing): "
                + "errorbusd could not finish \(action). Make it writable for errorbusd's user. (\(detail))"
        case .permissionDenied:
            "Permission denied on \(path): errorbusd could not finish \(action). "
                + "Its user must be able to read and write the state directory and the files in it "
                + "(check their owner and mode, or the unit's StateDirectory=). (\(detail))"
        case .corrupt:
            "\(path) is damaged or is not an errorbusd database (\(detail)). Stop errorbusd, move "
                + "errorbusd.sqlite and its -wal and -shm files aside (keep them for diagnosis; "
                + "`sqlite3 errorbusd.sqlite .recover` may salvage rows), and start errorbusd again: "
                + "it starts with an empty queue and enqueues the files still in the outbox again; "
                + "dead letters and incident history are lost."
        case .inUse:
            // `path` is the lock file, in the state directory.
            "Another process holds \(path), the lock of the state directory \(Self.directory(of: path)): "
                + "stop the other errorbusd, or give this one another state directory."
        case .newer:
            detail
        case .cannotOpen:
            "errorbusd cannot open \(path) while \(action) (\(detail)). Check that the directory exists "
                + "and that errorbusd's user may write it."
        case .closed:
            "The job store is closed (errorbusd is stopping): could not finish \(action)."
        case .other:
            "errorbusd could not finish \(action) in \(path): \(detail)"
        }
    }
}

extension StoreError {
    /// The store at `path` carries `requirements` that the errorbusd opening it (`reader`) does
    /// not know: one line naming who wrote it and the two ways on.
    static func newer(path: String, writer: String?, requirements: [(migration: String, release: String)], reader: String?) -> StoreError {
        let needed = requirements.map { "\"\($0.migration)\" (errorbusd \($0.release))" }.joined(separator: ", ")
        let writtenBy = writer.map { "errorbusd \($0)" } ?? "a newer errorbusd"
        let this = reader.map { "errorbusd \($0)" } ?? "this errorbusd"
        let release = requirements.map(\.release).max { ReleaseVersion($0) < ReleaseVersion($1) } ?? "a newer release"
        let back = reader.map { "errorbusd --downgrade-store \($0)" } ?? "errorbusd --downgrade-store VERSION"
        return StoreError(
            .newer,
            path: path,
            action: "opening the job store",
            detail: "\(path) was written by \(writtenBy) in a form \(this) cannot read (it needs \(needed)). "
                + "Nothing in it was changed. Install errorbusd \(release) or later again; or, to go back to \(this), "
                + "stop errorbusd and run `\(back)` with the newer errorbusd first."
        )
    }
}
