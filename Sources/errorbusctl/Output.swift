#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

#if canImport(Glibc)
import Glibc
#endif

import ErrorBusUnits

/// Where and how errorbusctl writes: JSON for scripts, aligned tables for people, colour only
/// on a terminal (and never with `NO_COLOR` set or `TERM=dumb`).
struct Output {
    let colour: Bool
    /// "Now", for relative times.
    let now: Date

    init(now: Date = Date()) {
        let environment = ProcessInfo.processInfo.environment
        colour = isatty(STDOUT_FILENO) == 1 && environment["NO_COLOR"] == nil && environment["TERM"] != "dumb"
        self.now = now
    }

    /// Prints a reply as JSON: pretty, keys sorted (`compact` for one line, as `watch` does).
    static func json<Value: Encodable>(_ value: Value, compact: Bool = false) throws {
        let encoder = JSONEncoder()
        encoder.outputFormatting = compact ? [.sortedKeys, .withoutEscapingSlashes] : [.sortedKeys, .prettyPrinted, .withoutEscapingSlashes]
        let data = try encoder.encode(value)
        print(String(decoding: data, as: UTF8.self))
        fflush(nil)
    }

    enum Tone {
        case good, warning, bad, dim, bold
        var code: String {
            switch self {
            case .good: "32"
            case .warning: "33"
            case .bad: "31"
            case .dim: "2"
            case .bold: "1"
            }
        }
    }

    func paint(_ text: String, _ tone: Tone?) -> String {
        guard colour, let tone, !text.isEmpty else { return text }
        return "\u{1B}[\(tone.code)m\(text)\u{1B}[0m"
    }

    /// A table: a header and rows, each column as wide as its widest cell, numbers aligned right.
    /// Cells may carry a tone, applied after the padding so that alignment holds.
    func table(_ header: [String], _ rows: [[Cell]], rightAligned: Set<Int> = []) -> String {
        var widths = header.map(\.count)
        for row in rows {
            for (index, cell) in row.enumerated() where index < widths.count {
                widths[index] = max(widths[index], cell.text.count)
            }
        }
        func line(_ cells: [Cell]) -> String {
            var parts: [String] = []
            for (index, cell) in cells.enumerated() {
                let padding = String(repeating: " ", count: max(0, widths[index] - cell.text.count))
                let isLast = index == cells.count - 1
                let text = paint(cell.text, cell.tone)
                if rightAligned.contains(index) {
                    parts.append(padding + text)
                } else {
                    parts.append(isLast ? text : text + padding)
                }
            }
            return parts.joined(separator: "  ")
        }
        let headerLine = line(header.map { Cell($0, .bold) })
        return ([headerLine] + rows.map(line)).joined(separator: "\n")
    }

    /// A table's cell. Its text is shown with control characters escaped (``escaped(_:)``): a
    /// file named with a line break stays on its row, and no name sends the terminal a sequence.
    struct Cell: ExpressibleByStringLiteral {
        var text: String
        var tone: Tone?
        init(_ text: String, _ tone: Tone? = nil) {
            self.text = Output.escaped(text)
            self.tone = tone
        }
        init(stringLiteral value: String) { self.init(value) }
    }

    /// `text` with its control characters written out, as Swift writes them in a string:
    /// `\n`, `\r`, `\t`, `\u{1B}`; a backslash stays one. For people's output only: JSON
    /// keeps names exact.
    static func escaped(_ text: String) -> String {
        guard text.unicodeScalars.contains(where: isControl) else { return text }
        var result = ""
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\n": result += "\\n"
            case "\r": result += "\\r"
            case "\t": result += "\\t"
            case _ where isControl(scalar): result += "\\u{\(String(scalar.value, radix: 16, uppercase: true))}"
            default: result.unicodeScalars.append(scalar)
            }
        }
        return result
    }

    /// C0 and C1 control characters, and DEL.
    private static func isControl(_ scalar: Unicode.Scalar) -> Bool {
        scalar.value < 0x20 || (0x7F...0x9F).contains(scalar.value)
    }

    // MARK: - Times

    /// A time as people say it relative to now: "in 8s", "3m ago", "now".
    func relative(_ iso: String?) -> String {
        guard let iso, let date = Self.date(iso) else { return "-" }
        return Self.relative(date, now: now)
    }

    /// An ISO 8601 time, with or without fractional seconds.
    static func date(_ iso: String) -> Date? {
        (try? Date(iso, strategy: Date.ISO8601FormatStyle(includingFractionalSeconds: true))) ?? (try? Date(iso, strategy: .iso8601))
    }

    static func relative(_ date: Date, now: Date) -> String {
        let interval = date.timeIntervalSince(now)
        // Something due in 600 ms is "in 1s", not "now"; something 600 ms old is "now".
        let seconds = interval > 0 ? Int(interval.rounded(.up)) : Int(interval.rounded())
        if seconds == 0 { return "now" }
        let text = DurationText.compact(seconds: abs(seconds))
        return seconds > 0 ? "in \(text)" : "\(text) ago"
    }
}
