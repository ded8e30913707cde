import Foundation
import GRDB

/// Jobs named by the first characters of their id, as an operator types them.
extension JobStore {
    /// The jobs whose id starts with `prefix` (optionally of one service), in id order: the
    /// first `limit` of them, and how many there are in all. An id is a prefix of itself.
    ///
    /// Reads a range of the `id` index (`id >= prefix AND id < the next string after every
    /// string that starts with it`), so it costs the matches, not the table.
    package func jobs(idPrefix prefix: String, service: String? = nil, limit: Int) throws(StoreError) -> (jobs: [OutboxJob], total: Int) {
        var condition = "id >= ?"
        var values = [prefix]
        if let end = Self.firstString(after: prefix) {
            condition += " AND id < ?"
            values.append(end)
        }
        if let service {
            condition += " AND service = ?"
            values.append(service)
        }
        let (sql, bound) = (condition, values)
        return try read("reading the jobs whose id starts with \(prefix)") { db in
            let arguments = StatementArguments(bound)
            let total = try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM job WHERE \(sql)", arguments: arguments) ?? 0
            let jobs = try OutboxJob.fetchAll(db, sql: "SELECT * FROM job WHERE \(sql) ORDER BY id LIMIT \(max(0, limit))", arguments: arguments)
            return (jobs, total)
        }
    }

    /// The least string greater than every string that starts with `prefix` (in the store's
    /// binary order, which for UTF-8 is the order of Unicode scalars): its last scalar that can
    /// be, increased by one, the ones after it dropped. `nil` when there is none (an empty
    /// prefix, or one of U+10FFFF alone).
    package static func firstString(after prefix: String) -> String? {
        var scalars = Array(prefix.unicodeScalars)
        while let last = scalars.popLast() {
            // Surrogates are no scalars: after U+D7FF comes U+E000.
            let next = last.value == 0xD7FF ? 0xE000 : last.value + 1
            if let scalar = Unicode.Scalar(next) {
                scalars.append(scalar)
                var string = String.UnicodeScalarView()
                string.append(contentsOf: scalars)
                return String(string)
            }
        }
        return nil
    }
}
