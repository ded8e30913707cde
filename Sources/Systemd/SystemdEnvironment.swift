import Glibc

/// What the service manager told this process through its environment.
///
/// Use it in `@main` to decide how to run: ``isUnderServiceManager`` for "started by systemd", and
/// ``standardErrorIsJournal`` to pick the journal `LogHandler` (structured fields, native
/// priorities) over plain lines on standard error.
///
/// ```swift
/// let environment = SystemdEnvironment.current
/// let writer = JournalWriter()
/// LoggingSystem.bootstrap { label in
///     environment.standardErrorIsJournal
///         ? JournalLogHandler(label: label, writer: writer)
///         : LineLogHandler()
/// }
/// ```
public struct SystemdEnvironment: Sendable, Hashable {
    /// `$INVOCATION_ID`: the 128-bit id systemd gives each run of a unit.
    public var invocationID: String?
    /// `$NOTIFY_SOCKET`: where `sd_notify` messages go (`Type=notify` services).
    public var notifySocket: String?
    /// `$JOURNAL_STREAM`: the device and inode of the journal stream connected to stdout/stderr.
    public var journalStream: JournalStream?

    /// The device and inode of the stream systemd connected to the service's standard output
    /// and error (`StandardOutput=journal`), from `$JOURNAL_STREAM` (`device:inode`).
    public struct JournalStream: Sendable, Hashable {
        /// `st_dev` of the stream socket.
        public var device: UInt64
        /// `st_ino` of the stream socket.
        public var inode: UInt64

        /// Creates the value from its two numbers.
        public init(device: UInt64, inode: UInt64) {
            self.device = device
            self.inode = inode
        }

        /// Parses `$JOURNAL_STREAM`'s `device:inode`; `nil` when malformed.
        public init?(_ text: String) {
            let parts = text.split(separator: ":", omittingEmptySubsequences: false)
            guard parts.count == 2, let device = UInt64(parts[0]), let inode = UInt64(parts[1]) else { return nil }
            self.init(device: device, inode: inode)
        }
    }

    /// Reads the three variables from `environment` (a test's dictionary, or a child's).
    public init(environment: [String: String]) {
        self.invocationID = environment["INVOCATION_ID"].flatMap { $0.isEmpty ? nil : $0 }
        self.notifySocket = environment["NOTIFY_SOCKET"].flatMap { $0.isEmpty ? nil : $0 }
        self.journalStream = environment["JOURNAL_STREAM"].flatMap(JournalStream.init)
    }

    /// The values of this process's environment, read now.
    public static var current: SystemdEnvironment {
        var environment: [String: String] = [:]
        for name in ["INVOCATION_ID", "NOTIFY_SOCKET", "JOURNAL_STREAM"] {
            if let value = getenv(name) {
                environment[name] = String(cString: value)
            }
        }
        return SystemdEnvironment(environment: environment)
    }

    /// Whether a service manager started this process (it set `$INVOCATION_ID` or
    /// `$NOTIFY_SOCKET`).
    public var isUnderServiceManager: Bool {
        self.invocationID != nil || self.notifySocket != nil
    }

    /// Whether `fileDescriptor` is the journal stream named by `$JOURNAL_STREAM`.
    ///
    /// Compares device and inode, as `systemd.exec(5)` recommends: a service whose stderr was
    /// redirected elsewhere (a shell pipe, a file) keeps the variable but no longer matches.
    public func isJournalStream(fileDescriptor: CInt) -> Bool {
        guard let journalStream, let status = try? Posix.fstat(fileDescriptor) else { return false }
        return UInt64(status.st_dev) == journalStream.device && UInt64(status.st_ino) == journalStream.inode
    }

    /// Whether standard error goes to the journal. When it does, log natively with
    /// ``JournalLogHandler`` instead of writing lines to standard error.
    public var standardErrorIsJournal: Bool {
        self.isJournalStream(fileDescriptor: STDERR_FILENO)
    }
}
