import Foundation
import Glibc
import Synchronization

/// Waits, without polling, until a directory's visible entries satisfy a condition: inotify wakes
/// the waiter on every creation, deletion or rename in the directory.
public enum DirectoryWatcher {
    /// Returns the directory's visible (not dot-) entries once `condition` holds for them.
    @discardableResult
    public static func wait(
        for directory: String,
        until condition: @escaping @Sendable ([String]) -> Bool
    ) async throws -> [String] {
        let mask = UInt32(IN_CREATE | IN_DELETE | IN_MOVED_FROM | IN_MOVED_TO | IN_CLOSE_WRITE)
        return try await wait(watching: directory, mask: mask, read: { try visibleEntries(of: directory) }, until: condition)
    }

    /// Returns the sizes of a directory's visible entries, by name, once `condition` holds for
    /// them: inotify wakes the waiter on every write to a file in it as well (a server's buffer
    /// of a request body growing).
    @discardableResult
    public static func wait(
        forSizesIn directory: String,
        until condition: @escaping @Sendable ([String: Int]) -> Bool
    ) async throws -> [String: Int] {
        let mask = UInt32(IN_CREATE | IN_DELETE | IN_MOVED_FROM | IN_MOVED_TO | IN_MODIFY | IN_CLOSE_WRITE)
        return try await wait(watching: directory, mask: mask, read: {
            var sizes: [String: Int] = [:]
            for name in try visibleEntries(of: directory) {
                var status = stat()
                if stat(directory + "/" + name, &status) == 0 { sizes[name] = Int(status.st_size) }
            }
            return sizes
        }, until: condition)
    }

    /// Returns a file's content once `condition` holds for it: inotify wakes the waiter on every
    /// write to the file (a log another process appends to).
    @discardableResult
    public static func wait(
        forContentOf file: String,
        until condition: @escaping @Sendable (String) -> Bool
    ) async throws -> String {
        let mask = UInt32(IN_MODIFY | IN_CLOSE_WRITE)
        return try await wait(watching: file, mask: mask, read: { (try? String(contentsOfFile: file, encoding: .utf8)) ?? "" }, until: condition)
    }

    private static func wait<State: Sendable>(
        watching path: String,
        mask: UInt32,
        read: @escaping @Sendable () throws -> State,
        until condition: @escaping @Sendable (State) -> Bool
    ) async throws -> State {
        let descriptor = inotify_init1(CInt(IN_CLOEXEC))
        guard descriptor >= 0 else { throw ChildProcessError.call("inotify_init1", errno) }
        guard inotify_add_watch(descriptor, path, mask) >= 0 else {
            let error = errno
            close(descriptor)
            throw ChildProcessError.call("inotify_add_watch(\(path))", error)
        }
        // Read after the watch exists, so no change between the two goes unseen.
        let state = try read()
        if condition(state) {
            close(descriptor)
            return state
        }
        let cancelled = Mutex(false)
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { continuation in
                Thread.detachNewThread {
                    watch(descriptor, read: read, until: condition, cancelled: cancelled, continuation)
                }
            }
        } onCancel: {
            cancelled.withLock { $0 = true }
        }
    }

    /// Reads events until the condition holds or the waiter is cancelled (checked every 100 ms).
    private static func watch<State>(
        _ descriptor: CInt,
        read readState: () throws -> State,
        until condition: (State) -> Bool,
        cancelled: borrowing Mutex<Bool>,
        _ continuation: CheckedContinuation<State, any Error>
    ) {
        defer { close(descriptor) }
        var buffer = [UInt8](repeating: 0, count: 64 * 1024)
        while true {
            if cancelled.withLock({ $0 }) {
                continuation.resume(throwing: CancellationError())
                return
            }
            var ready = pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0)
            guard poll(&ready, 1, 100) > 0 else { continue }
            let count = read(descriptor, &buffer, buffer.count)
            if count < 0 && errno == EINTR { continue }
            guard count > 0 else {
                continuation.resume(throwing: ChildProcessError.call("read(inotify)", errno))
                return
            }
            do {
                let state = try readState()
                if condition(state) {
                    continuation.resume(returning: state)
                    return
                }
            } catch {
                continuation.resume(throwing: error)
                return
            }
        }
    }

    static func visibleEntries(of directory: String) throws -> [String] {
        try FileManager.default.contentsOfDirectory(atPath: directory).filter { !$0.hasPrefix(".") }.sorted()
    }
}
