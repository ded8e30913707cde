public import Logging

/// A swift-log `LogHandler` that writes structured entries to the systemd journal natively
/// (`sd_journal_sendv`), and lines to standard error while the journal is unreachable.
///
/// Each entry carries:
///
/// | field | value |
/// |---|---|
/// | `MESSAGE` | the message, line breaks included |
/// | `PRIORITY` | syslog priority: trace and debug 7, info 6, notice 5, warning 4, error 3, critical 2 |
/// | `CODE_FILE`, `CODE_LINE`, `CODE_FUNC` | where the log call is (`#fileID`, `#line`, `#function`) |
/// | `SYSLOG_IDENTIFIER` | the `syslogIdentifier` given at creation; libsystemd's default (the program name) otherwise |
/// | `LOGGER` | the logger's label (``labelField``) |
/// | one field per metadata entry | the value as text, line breaks included |
///
/// Metadata comes from the handler (`logger[metadataKey:]`), the metadata provider and the log
/// call, the later overriding the earlier for the same key; an error passed to the log call adds
/// `ERROR_MESSAGE` and `ERROR_TYPE`. Keys become journal field names with
/// ``fieldName(forMetadataKey:)``: valid names such as `MESSAGE_ID` or `ERRORBUS_INCIDENT` pass
/// unchanged, others are upper-cased and cleaned (`request.id` → `REQUEST_ID`).
///
/// ```swift
/// let writer = JournalWriter()
/// let logger = Logger(label: "errorbus.sync") { JournalLogHandler(label: $0, writer: writer) }
/// logger.error("upload failed", metadata: ["MESSAGE_ID": "…", "errorbus.jobs": "12"])
/// // journalctl -o verbose LOGGER=errorbus.sync
/// ```
///
/// A log call costs one `access(2)`, one `sendmsg(2)` and one buffer allocation for the entry
/// (plus whatever producing the message and the metadata values costs). Handler metadata is
/// rendered once, when it is set.
public struct JournalLogHandler: LogHandler {
    /// The journal field that carries the logger's label.
    public static let labelField = "LOGGER"

    /// The logger's label.
    public let label: String
    /// `SYSLOG_IDENTIFIER`, or `nil` to let libsystemd use the program's name.
    public let syslogIdentifier: String?
    /// Sends the entries, and writes the fallback lines.
    public let writer: JournalWriter

    /// The lowest level this handler writes; `.info` by default.
    public var logLevel: Logger.Level = .info
    /// Metadata added to every entry at the time of the log call (e.g. a trace id).
    public var metadataProvider: Logger.MetadataProvider?

    /// The logger's own metadata (`logger[metadataKey:]`), sent with every entry.
    public var metadata: Logger.Metadata = [:] {
        didSet { self.renderedMetadata = Self.render(self.metadata) }
    }

    /// ``metadata`` as `NAME=value` fields, rendered when it changes rather than on every log call.
    private var renderedMetadata: [(key: String, field: [UInt8])] = []

    /// Creates a handler.
    ///
    /// - Parameters:
    ///   - label: the logger's label, sent as `LOGGER=`.
    ///   - writer: the writer shared by the process's handlers.
    ///   - syslogIdentifier: `SYSLOG_IDENTIFIER=`; the program's name when `nil`.
    ///   - metadataProvider: metadata added to every entry, e.g. a trace id from a task local.
    public init(
        label: String,
        writer: JournalWriter,
        syslogIdentifier: String? = nil,
        metadataProvider: Logger.MetadataProvider? = nil
    ) {
        self.label = label
        self.writer = writer
        self.syslogIdentifier = syslogIdentifier
        self.metadataProvider = metadataProvider
    }

    /// One entry of the logger's own metadata.
    public subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { self.metadata[key] }
        set { self.metadata[key] = newValue }
    }

    /// The journal field name a metadata key is sent under.
    ///
    /// Deterministic: a key that already is a valid journal field name (`A-Z`, `0-9`, `_`, not
    /// starting with a digit or `_`, at most 64 characters) is kept; any other key is
    /// upper-cased, each run of other characters becomes one `_`, leading and trailing ones are
    /// dropped (`request.id` → `REQUEST_ID`, `_private` → `PRIVATE`), and an empty result becomes
    /// `FIELD`. A name starting with a digit, or naming a field the handler writes itself
    /// (`MESSAGE`, `PRIORITY`, `CODE_FILE`, `CODE_LINE`, `CODE_FUNC`, `SYSLOG_IDENTIFIER`,
    /// `LOGGER`), is prefixed with `F_`. The result is cut to 64 characters.
    public static func fieldName(forMetadataKey key: String) -> String {
        JournalFieldName.name(forMetadataKey: key)
    }

    /// Sends one entry to the journal, or writes it to the writer's fallback while the journal
    /// is unreachable.
    public func log(event: LogEvent) {
        let message = event.message.description
        let provided = self.metadataProvider?.get() ?? [:]
        let explicit = event.metadata ?? [:]
        let error = event.error

        var entry = JournalEntry(
            capacity: 96 + message.utf8.count + event.file.utf8.count + event.function.utf8.count
                + self.label.utf8.count + (self.syslogIdentifier?.utf8.count ?? 0)
                + self.renderedMetadata.reduce(0) { $0 + $1.field.count + 4 }
                + (provided.count + explicit.count) * 48
        )
        entry.append("MESSAGE=", message)
        entry.append("PRIORITY=", Self.priority(event.level))
        entry.append("CODE_FILE=", event.file)
        entry.append("CODE_LINE=", String(event.line))
        entry.append("CODE_FUNC=", event.function)
        if let syslogIdentifier = self.syslogIdentifier {
            entry.append("SYSLOG_IDENTIFIER=", syslogIdentifier)
        }
        entry.append("LOGGER=", self.label)

        // Later sources win for the same key: handler, then provider, then the log call, then the error.
        for (key, field) in self.renderedMetadata
        where explicit[key] == nil && provided[key] == nil && !(error != nil && Self.isErrorKey(key)) {
            entry.append(rendered: field)
        }
        for (key, value) in provided where explicit[key] == nil && !(error != nil && Self.isErrorKey(key)) {
            entry.append(metadataKey: key, value: value)
        }
        for (key, value) in explicit where !(error != nil && Self.isErrorKey(key)) {
            entry.append(metadataKey: key, value: value)
        }
        if let error {
            entry.append(metadataKey: "error.message", value: "\(error)")
            entry.append(metadataKey: "error.type", value: "\(String(reflecting: type(of: error)))")
        }

        self.writer.write(entry) {
            var metadata = self.metadata
            metadata.merge(provided) { $1 }
            metadata.merge(explicit) { $1 }
            if let error {
                metadata["error.message"] = "\(error)"
                metadata["error.type"] = "\(String(reflecting: type(of: error)))"
            }
            return LogLine.format(level: event.level, message: message, metadata: metadata)
        }
    }

    /// The syslog priority journald stores for a swift-log level.
    static func priority(_ level: Logger.Level) -> String {
        switch level {
        case .trace, .debug: "7"
        case .info: "6"
        case .notice: "5"
        case .warning: "4"
        case .error: "3"
        case .critical: "2"
        }
    }

    private static func isErrorKey(_ key: String) -> Bool {
        key == "error.message" || key == "error.type"
    }

    private static func render(_ metadata: Logger.Metadata) -> [(key: String, field: [UInt8])] {
        metadata.sorted { $0.key < $1.key }.map { (key: $0.key, field: JournalEntry.render(key: $0.key, value: $0.value)) }
    }
}
