import ErrorBusStore

/// What the backlog has left under its limits (`sync.backlog.max-files`, `max-bytes`), as files
/// are taken in or set aside: one value for the ingest (does a new file fit?) and the dispatcher
/// (how many of the oldest must go?). Negative when the backlog is over a limit; a missing limit
/// leaves unbounded room.
struct BacklogRoom: Equatable {
    private(set) var files: Int
    private(set) var bytes: Int64

    init(_ backlog: JobStore.Backlog, _ limits: DaemonConfiguration.Sync.Backlog) {
        files = limits.maxFiles.map { $0 - backlog.jobs } ?? .max
        bytes = limits.maxBytes.map { $0 - backlog.bytes } ?? .max
    }

    /// Whether not even the smallest file fits.
    var isFull: Bool { files <= 0 || bytes <= 0 }

    /// Whether the backlog is over a limit.
    var isOver: Bool { files < 0 || bytes < 0 }

    /// Takes room for a file of `size` bytes; false, taking nothing, if it does not fit.
    mutating func take(_ size: Int64) -> Bool {
        guard files >= 1, bytes >= size else { return false }
        files -= 1
        bytes -= size
        return true
    }

    /// A file of `size` bytes left the backlog (set aside for room).
    mutating func free(_ size: Int64) {
        if files != .max { files += 1 }
        if bytes != .max { bytes += size }
    }
}
