import ErrorBusSupport
import Glibc
import Synchronization

/// An exclusive `flock(2)` on `errorbusd.lock` in the state directory, so that two daemons never
/// work on one queue. The kernel drops it when the process ends, `kill -9` included.
final class StoreLock: Sendable {
    /// The lock file's name in the state directory.
    static let fileName = "errorbusd.lock"

    let path: String
    /// The locked descriptor until ``release()``.
    private let descriptor: Mutex<CInt?>

    /// Takes the lock, or throws `EWOULDBLOCK` when another process still holds it after
    /// `patience`.
    ///
    /// A lock outlives its holder by a moment when the holder's descriptor was duplicated into a
    /// child being spawned (between `fork` and `exec`, close-on-exec descriptors are still open),
    /// so a lock released just now may still be held for a few milliseconds: hence the patience.
    init(directory: String, patience: Duration = .milliseconds(500)) throws(SystemCallError) {
        let path = directory + "/" + Self.fileName
        let descriptor = try SystemCall.open(path, flags: O_RDWR | O_CREAT, mode: 0o600)
        let deadline = ContinuousClock.now + patience
        while true {
            do {
                try SystemCall.flock(descriptor, LOCK_EX | LOCK_NB, path: path)
                break
            } catch where error.errnoCode == EWOULDBLOCK && ContinuousClock.now < deadline {
                usleep(10_000)
            } catch {
                try? SystemCall.close(descriptor)
                throw error
            }
        }
        self.path = path
        self.descriptor = Mutex(descriptor)
    }

    /// Drops the lock. Later calls do nothing.
    func release() {
        if let descriptor = self.descriptor.withLock({ value in defer { value = nil }; return value }) {
            try? SystemCall.close(descriptor)
        }
    }

    deinit {
        release()
    }
}
