import ErrorBusSupport
import Glibc

// The C functions whose names are also the names of their structures.
private let sysStat: @convention(c) (UnsafePointer<CChar>, UnsafeMutablePointer<stat>) -> CInt = stat
private let sysFlock: @convention(c) (CInt, CInt) -> CInt = flock
private let sysStatvfs: @convention(c) (UnsafePointer<CChar>, UnsafeMutablePointer<statvfs>) -> CInt = statvfs

/// One wrapper per system call the store makes itself (the state directory, its lock, free
/// space), through ``SystemCall/check(_:path:retryingInterrupted:_:)``.
enum StoreSyscalls {
    private static func check<T: FixedWidthInteger>(
        _ call: StaticString,
        path: String,
        _ body: () -> T
    ) throws(SystemCallError) -> T {
        try SystemCall.check(call, path: path, body)
    }

    /// `mkdir(2)`.
    static func mkdir(_ path: String, mode: mode_t) throws(SystemCallError) {
        _ = try check("mkdir", path: path) { Glibc.mkdir(path, mode) }
    }

    /// `stat(2)`; `nil` when nothing exists at `path`.
    static func stat(_ path: String) throws(SystemCallError) -> Glibc.stat? {
        var status = Glibc.stat()
        do {
            _ = try check("stat", path: path) { sysStat(path, &status) }
        } catch where error.errnoCode == ENOENT {
            return nil
        }
        return status
    }

    /// `access(2)`.
    static func access(_ path: String, _ mode: CInt) throws(SystemCallError) {
        _ = try check("access", path: path) { Glibc.access(path, mode) }
    }

    /// `open(2)`, always with `O_CLOEXEC` so that no child process inherits the descriptor.
    static func open(_ path: String, flags: CInt, mode: mode_t) throws(SystemCallError) -> CInt {
        try check("open", path: path) { Glibc.open(path, flags | O_CLOEXEC, mode) }
    }

    /// `flock(2)`.
    static func flock(_ descriptor: CInt, _ operation: CInt, path: String) throws(SystemCallError) {
        _ = try check("flock", path: path) { sysFlock(descriptor, operation) }
    }

    /// `close(2)`. Not retried on `EINTR`: on Linux the descriptor is gone either way.
    static func close(_ descriptor: CInt) {
        _ = Glibc.close(descriptor)
    }

    /// Whether `path` is a directory; nil when nothing is there.
    static func isDirectory(_ path: String) throws(SystemCallError) -> Bool? {
        guard let status = try stat(path) else { return nil }
        return status.st_mode & S_IFMT == S_IFDIR
    }

    /// `statvfs(3)`.
    static func statvfs(_ path: String) throws(SystemCallError) -> Glibc.statvfs {
        var status = Glibc.statvfs()
        _ = try check("statvfs", path: path) { sysStatvfs(path, &status) }
        return status
    }
}
