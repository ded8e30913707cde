public import Glibc
public import Logging

/// A swift-log `LogHandler` that writes one line per entry to standard error (or another
/// descriptor): time, level and message first, then the metadata as `KEY=value`, sorted by key.
///
///     2026-11-21T19:46:09+0000 warning incident 1 opened: api.example.net unreachable ERRORBUS_CATEGORY=unreachable ERRORBUS_INCIDENT=1
///
/// The lines are those ``JournalWriter`` writes while the journal is unreachable, so a process's
/// standard error has one format whichever handler wrote it. Line breaks in the message and in
/// values are written as `\n`; a value that is empty or holds a space, a tab, `"` or `\` is
/// quoted. The logger's label is not written: the stream is the process's own. An error passed
/// to the log call adds `error.message` and `error.type`, as ``JournalLogHandler`` adds
/// `ERROR_MESSAGE` and `ERROR_TYPE`.
///
/// Each line is written with one `write(2)` (more only if the kernel takes part of it), so lines
/// of concurrent log calls do not interleave on a pipe.
public struct LineLogHandler: LogHandler {
    /// Where lines go. Not owned: never closed.
    public let fileDescriptor: CInt

    /// The lowest level this handler writes; `.info` by default.
    public var logLevel: Logger.Level = .info
    /// Metadata added to every entry at the time of the log call (e.g. a trace id).
    public var metadataProvider: Logger.MetadataProvider?
    /// The logger's own metadata (`logger[metadataKey:]`), written with every entry.
    public var metadata: Logger.Metadata = [:]

    /// Creates a handler writing to `fileDescriptor`, standard error by default.
    public init(fileDescriptor: CInt = STDERR_FILENO, metadataProvider: Logger.MetadataProvider? = nil) {
        self.fileDescriptor = fileDescriptor
        self.metadataProvider = metadataProvider
    }

    /// One entry of the logger's own metadata.
    public subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { self.metadata[key] }
        set { self.metadata[key] = newValue }
    }

    /// Writes one line.
    public func log(event: LogEvent) {
        var metadata = self.metadata
        if let provided = self.metadataProvider?.get() { metadata.merge(provided) { $1 } }
        if let explicit = event.metadata { metadata.merge(explicit) { $1 } }
        if let error = event.error {
            metadata["error.message"] = "\(error)"
            metadata["error.type"] = "\(String(reflecting: type(of: error)))"
        }
        var line = LogLine.format(level: event.level, message: event.message.description, metadata: metadata)
        line.withUTF8 { bytes in
            // Nowhere left to report a failure to write a log line.
            try? Posix.writeAll(self.fileDescriptor, UnsafeRawBufferPointer(bytes))
        }
    }
}
