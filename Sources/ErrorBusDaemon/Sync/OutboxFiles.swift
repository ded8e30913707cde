import ErrorBus
import ErrorBusSupport
import Synchronization

/// The outbox entries taken care of that are no job of their own (a file over the size limit, a
/// copy of pending content), by name, with the size and modification time they had then, so
/// that rescans do not hash them again. A job's file is the store's to remember
/// (``JobStore/knownFiles(service:named:)``): this holds the few others, not the backlog. The
/// ingest records them; a file's removal after its delivery forgets it, so that a new file of
/// that name is looked at afresh.
final class SeenFiles: Sendable {
    private let stamps = Mutex<[String: FileStamp]>([:])

    /// The stamps known for `names`.
    func stamps(of names: some Sequence<String>) -> [String: FileStamp] {
        stamps.withLock { stamps in
            var known: [String: FileStamp] = [:]
            for name in names { known[name] = stamps[name] }
            return known
        }
    }

    func record(_ name: String, _ stamp: FileStamp?) {
        stamps.withLock { $0[name] = stamp }
    }

    func forget(_ name: String) {
        _ = stamps.withLock { $0.removeValue(forKey: name) }
    }
}

/// Files with the same content as a pending job, by the job's id: removed (or moved) with the
/// job's own file once it is delivered.
final class DuplicateFiles: Sendable {
    private let paths = Mutex<[String: [String]]>([:])

    func add(_ path: String, to job: String) {
        paths.withLock { $0[job, default: []].append(path) }
    }

    /// The copies of `job`'s content, forgotten here.
    func take(for job: String) -> [String] {
        paths.withLock { $0.removeValue(forKey: job) } ?? []
    }
}

/// Jobs whose file was written again with other content while they were under way or held by
/// the bus: given up when their turn comes, without reading the file, saying what replaced them.
final class ReplacedJobs: Sendable {
    private let replaced = Mutex<[String: Failure]>([:])

    func add(_ id: String, _ failure: Failure) {
        replaced.withLock { $0[id] = failure }
    }

    /// Why `id` was replaced, if it was; forgotten here.
    func take(_ id: String) -> Failure? {
        replaced.withLock { $0.isEmpty ? nil : $0.removeValue(forKey: id) }
    }
}

/// What the upload of each job read of its file (its status once the bytes were read), by the
/// job's id: its delivery removes the file only while it is still that (``DeliveredFileRemoval``).
/// Kept from the upload until the job's outcome is recorded.
final class ReadFiles: Sendable {
    private let statuses = Mutex<[String: FileStatus]>([:])

    func record(_ id: String, _ status: FileStatus?) {
        statuses.withLock { $0[id] = status }
    }

    func read(of id: String) -> FileStatus? {
        statuses.withLock { $0[id] }
    }

    func forget(_ id: String) {
        _ = statuses.withLock { $0.removeValue(forKey: id) }
    }
}
