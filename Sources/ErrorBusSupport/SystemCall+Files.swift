#if canImport(Glibc)
package import Glibc
#endif

// The C functions whose names are also the names of their structures.
private let sysStat: @convention(c) (UnsafePointer<CChar>, UnsafeMutablePointer<stat>) -> CInt = stat
private let sysFlock: @convention(c) (CInt, CInt) -> CInt = flock
private let sysStatvfs: @convention(c) (UnsafePointer<CChar>, UnsafeMutablePointer<statvfs>) -> CInt = statvfs

/// The file system calls errorbusd makes itself, one wrapper each, through
/// ``SystemCall/check(_:path:retryingInterrupted:_:)``: every failure is a ``SystemCallError``
/// naming the call and the path.
extension SystemCall {
    /// `mkdir(2)`.
    package static func mkdir(_ path: String, mode: mode_t) throws(SystemCallError) {
        _ = try check("mkdir", path: path) { Glibc.mkdir(path, mode) }
    }

    /// `stat(2)`; `nil` when nothing exists at `path`.
    package static func stat(_ path: String) throws(SystemCallError) -> Glibc.stat? {
        var status = Glibc.stat()
        do {
            _ = try check("stat", path: path) { sysStat(path, &status) }
        } catch where error.errnoCode == ENOENT {
            return nil
        }
        return status
    }

    /// Whether `path` is a directory; nil when nothing is there.
    package static func isDirectory(_ path: String) throws(SystemCallError) -> Bool? {
        guard let status = try stat(path) else { return nil }
        return status.st_mode & S_IFMT == S_IFDIR
    }

    /// The file system `path` is on (`stat(2)`'s `st_dev`, links followed); `nil` when nothing is
    /// there.
    package static func fileSystem(of path: String) throws(SystemCallError) -> UInt64? {
        try stat(path).map { UInt64($0.st_dev) }
    }

    /// `access(2)`.
    package static func access(_ path: String, _ mode: CInt) throws(SystemCallError) {
        _ = try check("access", path: path) { Glibc.access(path, mode) }
    }

    /// `open(2)`, always with `O_CLOEXEC` so that no child process inherits the descriptor.
    package static func open(_ path: String, flags: CInt, mode: mode_t = 0) throws(SystemCallError) -> CInt {
        try check("open", path: path) { Glibc.open(path, flags | O_CLOEXEC, mode) }
    }

    /// `flock(2)`.
    package static func flock(_ descriptor: CInt, _ operation: CInt, path: String) throws(SystemCallError) {
        _ = try check("flock", path: path) { sysFlock(descriptor, operation) }
    }

    /// `fsync(2)`.
    package static func fsync(_ descriptor: CInt, path: String) throws(SystemCallError) {
        _ = try check("fsync", path: path) { Glibc.fsync(descriptor) }
    }

    /// `statvfs(3)`.
    package static func statvfs(_ path: String) throws(SystemCallError) -> Glibc.statvfs {
        var status = Glibc.statvfs()
        _ = try check("statvfs", path: path) { sysStatvfs(path, &status) }
        return status
    }

    /// `unlink(2)`.
    package static func unlink(_ path: String) throws(SystemCallError) {
        _ = try check("unlink", path: path) { Glibc.unlink(path) }
    }

    /// `rename(2)`.
    package static func rename(_ source: String, to target: String) throws(SystemCallError) {
        _ = try check("rename", path: source) { Glibc.rename(source, target) }
    }
}
