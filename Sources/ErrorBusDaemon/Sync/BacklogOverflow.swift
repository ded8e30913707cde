import ErrorBusUnits
import ErrorBus
import ErrorBusStore
import ErrorBusSupport
import Foundation
import Logging
import Metrics
import Synchronization

/// An overflow of the backlog (`sync.backlog.*`): counted file by file, told once in the journal
/// when it starts and once when it ends, with what it cost. Shared by the ingest, which leaves
/// new files in the outbox (`reject-new`), and the dispatcher, which sets the oldest aside
/// (`drop-oldest`).
final class BacklogOverflow: Sendable {
    private struct Episode {
        var policy: DaemonConfiguration.Sync.Backlog.Overflow
        var since: Date
        var files: Int
    }

    private let episode = Mutex<Episode?>(nil)
    /// Outbox files left out for want of room (`reject-new`), by name, with when they were first
    /// left out: their arrival.
    private let leftOut = Mutex<[String: Date]>([:])
    private let logger: Logger
    private let clock: WallClock
    /// Files beyond the backlog's limits (swift-metrics), by policy.
    private let rejected = Counter(label: "errorbus_sync_overflow_files_total", dimensions: [("policy", "reject_new")])
    private let dropped = Counter(label: "errorbus_sync_overflow_files_total", dimensions: [("policy", "drop_oldest")])

    init(logger: Logger, clock: WallClock = .system) {
        self.logger = logger
        self.clock = clock
    }

    /// `files` more were rejected or dropped under `limits`.
    func record(_ files: Int, _ limits: DaemonConfiguration.Sync.Backlog) {
        guard files > 0 else { return }
        (limits.overflow == .rejectNew ? rejected : dropped).increment(by: files)
        let started = episode.withLock { episode -> Bool in
            if episode != nil {
                episode?.files += files
                return false
            }
            episode = Episode(policy: limits.overflow, since: clock.now(), files: files)
            return true
        }
        guard started else { return }
        let what =
            switch limits.overflow {
            case .rejectNew: "new files stay in the outbox, not taken, until deliveries make room (sync.backlog.overflow: reject-new)"
            case .dropOldest: "the oldest files waiting are set aside as dead letters to make room (sync.backlog.overflow: drop-oldest)"
            }
        logger.warning(
            "The backlog is over \(Self.describe(limits)): \(what). Each file is counted in errorbus_sync_overflow_files_total; the end of the overflow is told too"
        )
    }

    // MARK: Files left in the outbox

    /// Notes `names` left in the outbox; returns those not left out before.
    func leaveOut(_ names: [String], at now: Date? = nil) -> [String] {
        let now = now ?? clock.now()
        return leftOut.withLock { leftOut in
            names.filter { name in
                guard leftOut[name] == nil else { return false }
                leftOut[name] = now
                return true
            }
        }
    }

    /// A file left out was taken: when it was first left out, if it was.
    @discardableResult
    func taken(_ name: String) -> Date? {
        leftOut.withLock { $0.removeValue(forKey: name) }
    }

    /// The files left out for want of room.
    var leftOutNames: Set<String> { leftOut.withLock { Set($0.keys) } }

    /// Forgets files left out that are no longer in the outbox.
    func forgetLeftOut(_ gone: Set<String>) {
        guard !gone.isEmpty else { return }
        leftOut.withLock { leftOut in
            for name in gone { leftOut.removeValue(forKey: name) }
        }
    }

    /// How many files wait in the outbox for room.
    var waitingForRoom: Int { leftOut.withLock { $0.count } }

    /// When the file waiting longest for room was first left out.
    var oldestWaitingForRoom: Date? { leftOut.withLock { $0.values.min() } }

    /// Whether an overflow is under way.
    var isOngoing: Bool { episode.withLock { $0 != nil } }

    /// Ends the overflow once `backlog` is within nine tenths of `limits` (so that one delivery
    /// does not end it and the next file start it again) and no file waits for room.
    func endIfUnder(_ backlog: JobStore.Backlog, _ limits: DaemonConfiguration.Sync.Backlog) {
        let underFiles = limits.maxFiles.map { backlog.jobs * 10 <= $0 * 9 } ?? true
        let underBytes = limits.maxBytes.map { backlog.bytes <= $0 / 10 * 9 } ?? true
        guard underFiles && underBytes && waitingForRoom == 0 else { return }
        guard let ended = episode.withLock({ episode -> Episode? in
            defer { episode = nil }
            return episode
        }) else { return }
        let how = ended.policy == .rejectNew ? "left in the outbox for a while, none waits now" : "set aside as dead letters"
        logger.notice(
            "The backlog is under its limits again: \(ended.files) file\(ended.files == 1 ? " was" : "s were") \(how), during an overflow of \(DurationText.format(.seconds(clock.now().timeIntervalSince(ended.since))))"
        )
    }

    /// `sync.backlog.max-files (100) or sync.backlog.max-bytes (1.0 GiB)`.
    static func describe(_ limits: DaemonConfiguration.Sync.Backlog) -> String {
        [
            limits.maxFiles.map { "sync.backlog.max-files (\($0))" },
            limits.maxBytes.map { "sync.backlog.max-bytes (\(ByteCountText.format(Int($0))))" },
        ].compactMap { $0 }.joined(separator: " or ")
    }
}
