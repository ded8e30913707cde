import Foundation
import Synchronization

/// Outbox files the store refused to queue (its disk is full, it is read-only, it fails): they
/// wait in the outbox as much as queued files do, but the store does not know them. Counted here,
/// where the ingest meets the refusal, so that the backlog, health, the status and
/// `errorbus_sync_unqueued_files` count them too, until they are queued or gone.
///
/// A file's arrival is when the store first refused it; queued later, its job keeps that arrival.
final class UnqueuedFiles: Sendable {
    private struct File {
        var since: Date
        var bytes: Int64
    }

    private struct State {
        var files: [String: File] = [:]
        /// Why the store last refused them.
        var reason = ""
    }

    /// What waits unqueued, at a glance.
    struct Summary: Sendable, Equatable {
        var files = 0
        var bytes: Int64 = 0
        /// When the store first refused the file refused longest ago; `nil` when none waits.
        var oldest: Date?
        /// Why the store last refused them; empty when none waits.
        var reason = ""
    }

    private let state = Mutex(State())

    /// The store refused to queue `files` (name and size) for `reason`, at `now`.
    func refused(_ files: [(name: String, bytes: Int64)], reason: String, at now: Date) {
        guard !files.isEmpty else { return }
        state.withLock { state in
            for file in files {
                state.files[file.name] = File(since: state.files[file.name]?.since ?? now, bytes: file.bytes)
            }
            state.reason = reason
        }
    }

    /// When the store first refused `name`, if it did: the arrival its job keeps.
    func firstRefused(_ name: String) -> Date? {
        state.withLock { $0.files[name]?.since }
    }

    /// `name` was queued, or is no file to queue after all: when the store first refused it, if
    /// it did.
    @discardableResult
    func queued(_ name: String) -> Date? {
        state.withLock { $0.files.removeValue(forKey: name)?.since }
    }

    /// The files refused, by name.
    var names: Set<String> { state.withLock { Set($0.files.keys) } }

    /// Forgets files refused that are no longer in the outbox.
    func forget(_ gone: Set<String>) {
        guard !gone.isEmpty else { return }
        state.withLock { state in
            for name in gone { state.files.removeValue(forKey: name) }
        }
    }

    var summary: Summary {
        state.withLock { state in
            guard !state.files.isEmpty else { return Summary() }
            return Summary(
                files: state.files.count,
                bytes: state.files.values.reduce(0) { $0 + $1.bytes },
                oldest: state.files.values.map(\.since).min(),
                reason: state.reason
            )
        }
    }
}
