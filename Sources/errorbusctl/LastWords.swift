#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// What errorbusd said last before it stopped, picked from its process's journal entries
/// (`journalctl -o json _PID=…`): its own last error, not whatever the process wrote last.
///
/// The process writes more than errorbusd's words. On Debian 12 the Swift runtime's libdispatch
/// complains on standard error, after errorbusd's last words, that it may not set a worker
/// thread's priority (`Failed to set thread priority for worker thread … errno=13`); that line
/// says nothing of why errorbusd stopped. errorbusd's own words are told apart by how it writes:
///
/// | what | how it reaches the journal |
/// |---|---|
/// | its log entries (`JournalLogHandler`) | native entries with a `LOGGER` field and the level's `PRIORITY` (error 3, critical 2) |
/// | its log lines with `log.target: stderr` (`LineLogHandler`) | stream lines `TIME LEVEL MESSAGE …` |
/// | what it writes before its logging starts (a configuration it cannot use) | stream lines `errorbusd: …`, the reason first |
///
/// The line picked is, in this order: its last entry or line of level error or critical; else
/// the first of its `errorbusd: ` lines (the reason it could not start; those after it say what
/// it did about it, such as answering the calls waiting on its socket); else the process's last
/// line that is not the runtime's complaint about priorities (the dynamic loader's "error while
/// loading shared libraries", a crash's message); else nothing.
struct LastWords {
    /// One journal entry, as far as the choice needs it.
    struct Entry: Decodable {
        var message: String?
        var priority: String?
        var transport: String?
        var logger: String?

        enum CodingKeys: String, CodingKey {
            case message = "MESSAGE"
            case priority = "PRIORITY"
            case transport = "_TRANSPORT"
            case logger = "LOGGER"
        }

        init(from decoder: any Decoder) throws {
            let container = try decoder.container(keyedBy: CodingKeys.self)
            message = Self.text(container, .message)
            priority = Self.text(container, .priority)
            transport = Self.text(container, .transport)
            logger = Self.text(container, .logger)
        }

        /// A field's value: journalctl writes text as a string, bytes that are not printable
        /// UTF-8 as an array of numbers, and a field given more than once as an array of those.
        private static func text(_ container: KeyedDecodingContainer<CodingKeys>, _ key: CodingKeys) -> String? {
            if let text = try? container.decodeIfPresent(String.self, forKey: key) { return text }
            if let bytes = try? container.decodeIfPresent([UInt8].self, forKey: key) { return String(decoding: bytes, as: UTF8.self) }
            if let texts = try? container.decodeIfPresent([String].self, forKey: key) { return texts.last }
            return nil
        }
    }

    /// The entries, oldest first.
    var entries: [Entry]

    /// Reads `journalctl -o json`'s output: one JSON object per line. A line that is not one is
    /// passed over.
    init(json: String) {
        let decoder = JSONDecoder()
        entries = json.split(separator: "\n").compactMap { line in
            try? decoder.decode(Entry.self, from: Data(line.utf8))
        }
    }

    /// The fields `journalctl --output-fields=` is asked for.
    static let fields = ["MESSAGE", "PRIORITY", "_TRANSPORT", "LOGGER"]

    /// errorbusd's own last error, or what else says most of why it stopped; `nil` when the
    /// process said nothing but the runtime's complaints.
    var line: String? {
        if let error = entries.reversed().lazy.compactMap(Self.ownError).first { return error }
        if let reason = entries.lazy.compactMap(Self.beforeLogging).first { return reason }
        return entries.reversed().lazy.compactMap(\.message).first { !$0.isEmpty && !Self.isRuntimeComplaint($0) }
    }

    /// The message of one of errorbusd's log entries or lines of level error or critical.
    private static func ownError(_ entry: Entry) -> String? {
        guard let message = entry.message else { return nil }
        if entry.logger != nil, entry.transport == "journal" {
            guard let priority = entry.priority.flatMap(Int.init), priority <= 3 else { return nil }
            return message
        }
        // TIME LEVEL MESSAGE …, as LineLogHandler writes it.
        let parts = message.split(separator: " ", maxSplits: 2, omittingEmptySubsequences: false)
        guard parts.count == 3, parts[0].first?.isNumber == true, parts[0].contains("T"),
            parts[1] == "error" || parts[1] == "critical"
        else { return nil }
        return String(parts[2])
    }

    /// What errorbusd wrote before its logging started, without its `errorbusd: ` prefix.
    private static func beforeLogging(_ entry: Entry) -> String? {
        guard entry.logger == nil, let message = entry.message, message.hasPrefix(prefix) else { return nil }
        return String(message.dropFirst(prefix.count))
    }

    private static let prefix = "errorbusd: "

    /// libdispatch's complaint that it may not set a worker thread's priority.
    private static func isRuntimeComplaint(_ message: String) -> Bool {
        message.hasPrefix("Failed to set thread priority")
    }
}
