import ErrorBusSupport
#if canImport(Glibc)
import Glibc
#endif
import Logging
import Synchronization

/// Removes (or moves, by `sync.after-delivery`) a delivered file, and forgets having seen it so
/// that a new file of that name is looked at afresh.
final class DeliveredFileRemoval: Sendable {
    private let setting: Mutex<AfterDelivery>
    private let seen: SeenFiles
    private let logger: Logger

    init(afterDelivery: AfterDelivery, seen: SeenFiles, logger: Logger) {
        self.setting = Mutex(afterDelivery)
        self.seen = seen
        self.logger = logger
    }

    var afterDelivery: AfterDelivery {
        get { setting.withLock { $0 } }
        set { setting.withLock { $0 = newValue } }
    }

    /// Removes the file of a dead letter given up by the retention; a new file of that name is
    /// looked at afresh.
    func removePruned(_ path: String, fileName: String) {
        seen.forget(fileName)
        do throws(SystemCallError) {
            try SystemCall.unlink(path)
        } catch where error.errnoCode != ENOENT {
            logger.error("cannot remove \(path), a dead letter given up by sync.dead-letters: \(error)")
        } catch {
            // Already gone.
        }
    }

    func remove(_ path: String, fileName: String) {
        seen.forget(fileName)
        do throws(SystemCallError) {
            switch afterDelivery {
            case .delete: try SystemCall.unlink(path)
            case .move(let directory): try SystemCall.rename(path, to: directory + "/" + fileName)
            }
        } catch where error.errnoCode != ENOENT {
            logger.error("cannot remove or move delivered \(path) (sync.after-delivery): \(error)")
        } catch {
            // Already gone: an operator or a copy's removal took it.
        }
    }
}
