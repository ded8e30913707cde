import Foundation

/// One journal entry as `journalctl -o json` prints it.
public struct JournalRecord: Sendable {
    /// Every value of every field (a field may occur more than once in an entry).
    public var fields: [String: [String]]

    /// The value of a field that occurs once.
    public subscript(name: String) -> String? {
        guard let values = self.fields[name], values.count == 1 else { return nil }
        return values[0]
    }

    public init(json: [String: Any]) {
        var fields: [String: [String]] = [:]
        for (name, value) in json {
            fields[name] = Self.strings(value)
        }
        self.fields = fields
    }

    /// journalctl prints a text value as a string, a binary one as an array of bytes, and a
    /// field that occurs several times as an array of those.
    private static func strings(_ value: Any) -> [String] {
        if let string = value as? String { return [string] }
        if let bytes = value as? [Int] { return [String(decoding: bytes.map(UInt8.init), as: UTF8.self)] }
        if let values = value as? [Any] { return values.flatMap(Self.strings) }
        return []
    }
}

/// Reads the journal back with the real `journalctl`.
public enum Journalctl {
    /// The entries matching `matches` (`FIELD=value`), polling journalctl (at most 10 seconds)
    /// until there are at least `count`; journald may need a moment to write them.
    public static func entries(_ matches: [String], atLeast count: Int) async throws -> [JournalRecord] {
        var records: [JournalRecord] = []
        for attempt in 0..<100 {
            if attempt > 0 { try await Task.sleep(for: .milliseconds(100)) }
            let run = try await ChildProcess.run("/usr/bin/journalctl", ["-o", "json", "--all", "--no-pager"] + matches)
            records = try run.outputLines.map { line in
                guard let object = try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any] else {
                    throw TestSocketError(description: "journalctl printed something other than a JSON object: \(line)")
                }
                return JournalRecord(json: object)
            }
            if records.count >= count { return records }
        }
        return records
    }
}
