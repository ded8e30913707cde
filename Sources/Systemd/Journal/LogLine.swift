import Logging

import Glibc

/// The one-line text form of a log entry on standard error, written by ``LineLogHandler`` and by
/// ``JournalWriter`` while the journal is unreachable:
///
///     2026-11-21T19:46:09+0000 warning incident 1 opened: … ERRORBUS_CATEGORY=unreachable ERRORBUS_INCIDENT=1
///
/// Time, level and message lead, so that a person reading a terminal or a container's log reads
/// what happened first; the metadata follows as `KEY=value`, sorted by key. A value that is
/// empty or holds a space, a tab, `"` or `\` is quoted (`"…"`, with `\"` and `\\`). Line breaks
/// in the message and in values are written as `\n`, so one entry stays one line for whoever
/// reads the stream (a terminal, a pipe, or journald's own stream once it is back).
enum LogLine {
    static func format(
        level: Logger.Level,
        message: String,
        metadata: Logger.Metadata
    ) -> String {
        var line = "\(self.timestamp()) \(level) \(self.escaped(message))"
        for (key, value) in metadata.sorted(by: { $0.key < $1.key }) {
            line += " \(self.escaped(key))=\(self.value(value.description))"
        }
        line += "\n"
        return line
    }

    /// A metadata value, quoted when it would not read as one word.
    static func value(_ text: String) -> String {
        let needsQuotes = text.isEmpty || text.utf8.contains {
            $0 == UInt8(ascii: " ") || $0 == UInt8(ascii: "\t") || $0 == UInt8(ascii: "\"") || $0 == UInt8(ascii: "\\")
        }
        guard needsQuotes else { return self.escaped(text) }
        var quoted = "\""
        for scalar in self.escaped(text).unicodeScalars {
            switch scalar {
            case "\"": quoted += "\\\""
            case "\\": quoted += "\\\\"
            default: quoted.unicodeScalars.append(scalar)
            }
        }
        return quoted + "\""
    }

    static func escaped(_ text: String) -> String {
        guard text.utf8.contains(where: { $0 == UInt8(ascii: "\n") || $0 == UInt8(ascii: "\r") }) else {
            return text
        }
        var result = ""
        result.reserveCapacity(text.utf8.count + 8)
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\n": result += "\\n"
            case "\r": result += "\\r"
            default: result.unicodeScalars.append(scalar)
            }
        }
        return result
    }

    /// Local time, `%Y-%m-%dT%H:%M:%S%z`, like swift-log's `StreamLogHandler`.
    static func timestamp() -> String {
        var now = time(nil)
        var local = tm()
        guard localtime_r(&now, &local) != nil else { return "<unknown time>" }
        return withUnsafeTemporaryAllocation(of: CChar.self, capacity: 64) { buffer in
            let length = strftime(buffer.baseAddress!, buffer.count, "%Y-%m-%dT%H:%M:%S%z", &local)
            return String(decoding: UnsafeRawBufferPointer(start: buffer.baseAddress!, count: length), as: UTF8.self)
        }
    }
}
