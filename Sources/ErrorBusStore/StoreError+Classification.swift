import ErrorBusSupport
import GRDB
import Glibc

extension StoreError {
    /// Turns what SQLite or a system call reported into a ``StoreError`` an operator understands.
    ///
    /// - Parameters:
    ///   - error: what was thrown.
    ///   - database: the database file's path.
    ///   - directory: the state directory, whose free space tells an I/O error caused by a full
    ///     disk from other I/O errors (SQLite reports some `ENOSPC` as `SQLITE_IOERR_*`).
    ///   - action: what the store was doing, e.g. "saving new jobs".
    static func classifying(
        _ error: any Error,
        database: String,
        directory: String,
        action: String
    ) -> StoreError {
        switch error {
        case let error as StoreError:
            return error
        case let error as SystemCallError:
            return StoreError(systemCall: error, action: action)
        case let error as DatabaseError:
            return StoreError(database: error, path: database, directory: directory, action: action)
        default:
            return StoreError(.other, path: database, action: action, detail: String(describing: error))
        }
    }

    /// A failed system call: `errno` says which kind of trouble it is.
    init(systemCall error: SystemCallError, action: String) {
        let detail = "\(error.call): \(error.reason)"
        let code: Code =
            switch error.errnoCode {
            case EACCES, EPERM: .permissionDenied
            case EROFS: .readOnly
            case ENOSPC, EDQUOT: .diskFull
            case EWOULDBLOCK: .inUse
            default: .cannotOpen
            }
        self.init(code, path: error.path ?? "", action: action, detail: detail)
    }

    /// An SQLite error: its result code, and for I/O errors the free space left, say which kind of
    /// trouble it is.
    init(database error: DatabaseError, path: String, directory: String, action: String) {
        let detail = "SQLite error \(error.extendedResultCode.rawValue): \(error.message ?? "no message")"
        let code: Code
        var path = path
        switch error.resultCode {
        case .SQLITE_FULL:
            code = .diskFull
        case .SQLITE_IOERR where error.extendedResultCode == .SQLITE_IOERR_SHMSIZE:
            // Growing the -shm file failed: SQLite writes to it to be sure the space exists.
            code = .diskFull
        case .SQLITE_IOERR, .SQLITE_CANTOPEN:
            if Self.isFull(directory) {
                code = .diskFull
            } else if error.resultCode == .SQLITE_CANTOPEN {
                code = Self.directoryProblem(directory) ?? .cannotOpen
                if code != .cannotOpen { path = directory }
            } else {
                code = .other
            }
        case .SQLITE_READONLY:
            code = .readOnly
            if error.extendedResultCode == .SQLITE_READONLY_DIRECTORY { path = directory }
        case .SQLITE_PERM, .SQLITE_AUTH:
            code = .permissionDenied
        case .SQLITE_CORRUPT, .SQLITE_NOTADB:
            code = .corrupt
        default:
            code = .other
        }
        self.init(code, path: path, action: action, detail: detail)
    }

    /// Whether the file system holding `directory` has less room left than one write needs.
    static func isFull(_ directory: String) -> Bool {
        guard let status = try? SystemCall.statvfs(directory) else { return false }
        // Root may use the blocks reserved for it; others may not.
        let blocks = geteuid() == 0 ? status.f_bfree : status.f_bavail
        let inodes = geteuid() == 0 ? status.f_ffree : status.f_favail
        let bytes = UInt64(blocks) * UInt64(status.f_frsize)
        return bytes < 64 * 1024 || (status.f_files > 0 && inodes == 0)
    }

    /// Why the state directory cannot be written, if `access(2)` says so.
    private static func directoryProblem(_ directory: String) -> Code? {
        do {
            try SystemCall.access(directory, R_OK | W_OK | X_OK)
            return nil
        } catch {
            switch error.errnoCode {
            case EACCES, EPERM: return .permissionDenied
            case EROFS: return .readOnly
            default: return nil
            }
        }
    }
}
