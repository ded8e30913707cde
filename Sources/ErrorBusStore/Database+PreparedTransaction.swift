import GRDB

extension Database {
    /// Runs `body` in an immediate transaction whose `BEGIN` and `COMMIT` are prepared once per
    /// connection, and rolls back if `body` or the commit throws.
    ///
    /// `inTransaction` parses both statements anew each time: with a delivery commit every few
    /// uploads, that parsing was a tenth of the writer's time. Only for closures that do not
    /// nest transactions or savepoints and leave nothing for transaction observers (the store
    /// registers none).
    func inPreparedTransaction<T>(_ body: () throws -> T) throws -> T {
        try cachedStatement(sql: "BEGIN IMMEDIATE TRANSACTION").execute()
        do {
            let result = try body()
            try cachedStatement(sql: "COMMIT TRANSACTION").execute()
            return result
        } catch {
            // Some errors (a full disk, I/O) end the transaction themselves.
            if isInsideTransaction { try? rollback() }
            throw error
        }
    }
}
