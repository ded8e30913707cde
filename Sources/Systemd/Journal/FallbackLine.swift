import Logging

import Glibc

/// The one-line text form of a log entry, written to standard error while the journal is
/// unreachable: `2026-11-21T19:46:09+0000 warning errorbus.sync: message key=value …`.
///
/// Line breaks in the message and in values are written as `\n`, so one entry stays one line
/// for whoever reads the stream (a terminal, a pipe, or journald's own stream once it is back).
enum FallbackLine {
    static func format(
        level: Logger.Level,
        label: String,
        message: String,
        metadata: Logger.Metadata
    ) -> String {
        var line = "\(self.timestamp()) \(level) \(label): \(self.escaped(message))"
        for (key, value) in metadata.sorted(by: { $0.key < $1.key }) {
            line += " \(self.escaped(key))=\(self.escaped(value.description))"
        }
        line += "\n"
        return line
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
