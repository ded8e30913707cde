import Foundation
import GRDB

/// Jobs named by the first characters of their id, as an operator types them.
extension JobStore {
    /// The jobs whose id starts with `prefix` (optionally of one service), in id order: the
    /// first `limit` of them, and how many there are in all. An id is a prefix of itself.
    ///
    /// Reads ranges of the `id` index, so it costs the matches, not the table: the keys stored
    /// as text (`id >= prefix AND id < the next string after every string that starts with
    /// it`) and, for a hex prefix, the digests stored as bytes (``StoredJobKey``).
    package func jobs(idPrefix prefix: String, service: String? = nil, limit: Int) throws(StoreError) -> (jobs: [OutboxJob], total: Int) {
        var ranges: [String] = []
        var arguments = StatementArguments()
        if let end = Self.firstString(after: prefix) {
            ranges.append("(id >= ? AND id < ?)")
            arguments += [prefix, end]
        } else {
            ranges.append("(id >= ? AND typeof(id) = 'text')")
            arguments += [prefix]
        }
        if let digests = StoredJobKey.digestRange(prefix: prefix) {
            ranges.append(digests.end == nil ? "(id >= ?)" : "(id >= ? AND id < ?)")
            arguments += [digests.start]
            if let end = digests.end { arguments += [end] }
        }
        var condition = "(\(ranges.joined(separator: " OR ")))"
        if let service {
            condition += " AND service = ?"
            arguments += [service]
        }
        let (sql, bound) = (condition, arguments)
        return try read("reading the jobs whose id starts with \(prefix)") { db in
            let total = try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM job WHERE \(sql)", arguments: bound) ?? 0
            let jobs = try OutboxJob.fetchAll(db, sql: "SELECT * FROM job WHERE \(sql) ORDER BY id LIMIT \(max(0, limit))", arguments: bound)
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
