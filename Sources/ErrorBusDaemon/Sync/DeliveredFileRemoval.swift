import ErrorBusSupport
#if canImport(Glibc)
import Glibc
#endif
import Logging
import Synchronization

/// Removes (or moves, by `sync.after-delivery`) a delivered file, and forgets having seen it so
/// that a new file of that name is looked at afresh.
///
/// Only the file that was read: under a read lease (``WriterLeases``), so that no writer can open
/// it meanwhile, the file is removed only if no process has it open for writing and it still has
/// the inode, size and modification time it had when its bytes were read. A file written since
/// (a writer that appends in place, or one that renamed a new file into its place) is left where
/// it is and taken again as new content.
final class DeliveredFileRemoval: Sendable {
    /// What became of a delivered file.
    enum Outcome: Sendable, Equatable {
        /// Removed or moved, or already gone.
        case removed
        /// Left in the outbox: it changed after it was read, or a process has it open for
        /// writing. Its caller has it looked at again.
        case leftChanged
        /// Could not be removed or moved (logged).
        case failed
    }

    private let setting: Mutex<AfterDelivery>
    private let seen: SeenFiles
    private let leases: WriterLeases
    private let logger: Logger

    init(afterDelivery: AfterDelivery, seen: SeenFiles, leases: WriterLeases, logger: Logger) {
        self.setting = Mutex(afterDelivery)
        self.seen = seen
        self.leases = leases
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

    /// Removes or moves the delivered file at `path` if it is still the one whose bytes were
    /// sent: `read` is its status once they were read (`nil`: unknown, only a writer that has it
    /// open keeps it).
    @discardableResult
    func remove(_ path: String, fileName: String, read: FileStatus?) -> Outcome {
        seen.forget(fileName)
        let descriptor: CInt
        do throws(SystemCallError) {
            // O_NOFOLLOW: a link put in the file's place is not the file that was sent.
            descriptor = try SystemCall.open(path, flags: O_RDONLY | O_NONBLOCK | O_NOFOLLOW)
        } catch where error.errnoCode == ENOENT {
            // Already gone: an operator or a copy's removal took it.
            return .removed
        } catch where error.errnoCode == ELOOP {
            logger.notice("\(fileName) was delivered, but a symbolic link is in its place now: it is left in the outbox")
            return .failed
        } catch {
            // Not readable any more: removed on the strength of the delivery alone, as before.
            return unlinkOrMove(path, fileName: fileName)
        }
        defer { try? SystemCall.close(descriptor) }
        switch leases.take(descriptor, path: path) {
        case .writerHasItOpen:
            logger.notice("\(fileName) was delivered, but a process has it open for writing: it is left in the outbox, and taken again (as new content if it changes) once its writer closes it")
            return .leftChanged
        case .held:
            // Held until the file is gone: no writer opens it between the check and the removal.
            defer { leases.release(descriptor) }
            return checkedRemoval(descriptor, path, fileName: fileName, read: read)
        case .unavailable:
            return checkedRemoval(descriptor, path, fileName: fileName, read: read)
        }
    }

    private func checkedRemoval(_ descriptor: CInt, _ path: String, fileName: String, read: FileStatus?) -> Outcome {
        if let read {
            do throws(SystemCallError) {
                let now = try FileStatus.of(descriptor: descriptor, path: path)
                guard now.isSameContent(as: read) else {
                    let what = now.inode != read.inode || now.device != read.device ? "another file is in its place" : "\(read.size) bytes when read, \(now.size) now"
                    logger.notice("\(fileName) changed after it was read for its upload (\(what)): it is left in the outbox and taken again as new content")
                    return .leftChanged
                }
            } catch {
                logger.error("cannot check delivered \(path) before removing it: \(error); it is left in the outbox")
                return .failed
            }
        }
        return unlinkOrMove(path, fileName: fileName)
    }

    private func unlinkOrMove(_ path: String, fileName: String) -> Outcome {
        do throws(SystemCallError) {
            switch afterDelivery {
            case .delete: try SystemCall.unlink(path)
            case .move(let directory): try SystemCall.rename(path, to: directory + "/" + fileName)
            }
            return .removed
        } catch where error.errnoCode != ENOENT {
            logger.error("cannot remove or move delivered \(path) (sync.after-delivery): \(error)")
            return .failed
        } catch {
            return .removed
        }
    }
}
