import Glibc
import Logging
import Synchronization

/// Sends journal entries with `sd_journal_sendv`, and writes them as lines to standard error
/// while the journal is unreachable.
///
/// Share one writer between all ``JournalLogHandler``s of a process (create it in `@main`): it
/// remembers whether the journal is reachable, so an outage costs one failed attempt per
/// ``retryInterval``, not one per log line.
///
/// ## When is the journal unreachable?
///
/// - `/run/systemd/journal/socket` does not exist (no journald, or `/run` not set up yet).
///   libsystemd treats that case as success and drops the entry, so the writer checks for the
///   socket itself before each send (one `access(2)`, about a microsecond);
/// - `sd_journal_sendv` fails, for example with `ECONNREFUSED` when journald has exited and left
///   its socket behind.
///
/// The first entry that fails goes to standard error with a line saying why; so does every
/// entry until the journal answers again. While the journal is unreachable only one entry per
/// ``retryInterval`` tries it; the others go straight to standard error. When an attempt
/// succeeds the writer says so, on standard error and in the journal, with the number of entries
/// that went to standard error meanwhile. No entry is dropped on purpose and nothing is thrown:
/// logging never stops the daemon's work.
///
/// ## Blocking
///
/// The writer never sleeps or waits for the journal to come back. What remains is the kernel's
/// back-pressure on a single send: like every libsystemd client, `sd_journal_sendv` waits while
/// journald's receive queue is full, and a write to standard error waits while its reader is
/// not reading.
public final class JournalWriter: Sendable {
    /// How long an unreachable journal is left alone before the next entry tries it again.
    public let retryInterval: Duration

    /// Where entries go while the journal is unreachable. Not owned: never closed.
    public let fallbackFileDescriptor: CInt

    /// The socket libsystemd sends to. Fixed in libsystemd; only checked here.
    public static let journalSocketPath = "/run/systemd/journal/socket"

    /// Whether ``journalSocketPath`` exists and is a socket: whether a journald serves this
    /// process's mount namespace (it may still be stopped and have left its socket behind).
    public static var journalSocketExists: Bool {
        guard let status = try? Posix.status(ofPath: journalSocketPath) else { return false }
        return status.st_mode & S_IFMT == S_IFSOCK
    }

    private enum Reachability {
        case reachable
        case unreachable(nextAttempt: ContinuousClock.Instant, diverted: Int)
    }

    /// Whether the journal answered the last attempt; protected by its own mutex.
    private let reachability = Mutex(Reachability.reachable)

    /// Creates a writer.
    ///
    /// - Parameters:
    ///   - fallbackFileDescriptor: where entries go while the journal is unreachable; standard
    ///     error (descriptor 2) by default.
    ///   - retryInterval: how long to wait after a failed attempt before trying the journal again.
    public init(fallbackFileDescriptor: CInt = 2, retryInterval: Duration = .seconds(1)) {
        self.fallbackFileDescriptor = fallbackFileDescriptor
        self.retryInterval = retryInterval
    }

    /// Whether the last attempt reached the journal (`true` before the first one).
    public var isJournalReachable: Bool {
        self.reachability.withLock {
            if case .reachable = $0 { return true }
            return false
        }
    }

    /// Sends `entry`, or writes `fallbackLine()` to the fallback descriptor when the journal
    /// cannot take it.
    func write(_ entry: borrowing JournalEntry, fallbackLine: () -> String) {
        let attempt = self.reachability.withLock { state -> Bool in
            switch state {
            case .reachable:
                return true
            case .unreachable(let nextAttempt, let diverted):
                let now = ContinuousClock.now
                if now >= nextAttempt {
                    state = .unreachable(nextAttempt: now.advanced(by: self.retryInterval), diverted: diverted)
                    return true
                }
                state = .unreachable(nextAttempt: nextAttempt, diverted: diverted + 1)
                return false
            }
        }

        if attempt {
            do throws(SystemdError) {
                try Self.send(entry)
                let recovered = self.reachability.withLock { state -> Int? in
                    guard case .unreachable(_, let diverted) = state else { return nil }
                    state = .reachable
                    return diverted
                }
                if let recovered {
                    self.announceRecovery(divertedEntries: recovered)
                }
                return
            } catch {
                let isNewOutage = self.reachability.withLock { state -> Bool in
                    switch state {
                    case .reachable:
                        state = .unreachable(nextAttempt: .now.advanced(by: self.retryInterval), diverted: 1)
                        return true
                    case .unreachable(let nextAttempt, let diverted):
                        state = .unreachable(nextAttempt: nextAttempt, diverted: diverted + 1)
                        return false
                    }
                }
                if isNewOutage {
                    self.writeFallback(
                        LogLine.format(
                            level: .warning,
                            message: "journal unreachable at \(Self.journalSocketPath) (\(error)); writing log "
                                + "entries here, trying the journal again every \(self.retryInterval)",
                            metadata: [:]
                        )
                    )
                }
            }
        }
        self.writeFallback(fallbackLine())
    }

    /// Checks that the journal socket exists (libsystemd would silently drop the entry otherwise),
    /// then sends.
    private static func send(_ entry: borrowing JournalEntry) throws(SystemdError) {
        try Posix.access(Self.journalSocketPath, F_OK)
        let failure = entry.withFields { fields -> SystemdError? in
            do throws(SystemdError) {
                try Libsystemd.journalSendv(fields)
                return nil
            } catch {
                return error
            }
        }
        if let failure { throw failure }
    }

    private func announceRecovery(divertedEntries: Int) {
        let message = "journal reachable again; \(divertedEntries) log "
            + (divertedEntries == 1 ? "entry was" : "entries were") + " written to standard error meanwhile"
        var entry = JournalEntry(capacity: 160)
        entry.append("MESSAGE=", message)
        entry.append("PRIORITY=", "5")
        entry.append("LOGGER=", "JournalWriter")
        entry.append("JOURNAL_WRITER_DIVERTED_ENTRIES=", String(divertedEntries))
        // Best effort: if this fails the next entry notices the outage again.
        try? Self.send(entry)
        self.writeFallback(LogLine.format(level: .notice, message: message, metadata: [:]))
    }

    private func writeFallback(_ line: String) {
        var line = line
        line.withUTF8 { bytes in
            // Nowhere left to report a failure to write the fallback itself.
            try? Posix.writeAll(self.fallbackFileDescriptor, UnsafeRawBufferPointer(bytes))
        }
    }
}
