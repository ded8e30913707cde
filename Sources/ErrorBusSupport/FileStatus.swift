#if canImport(Glibc)
import Glibc
#endif

/// What `lstat(2)` says of a path: its type, size and modification time.
///
/// Read here, where only Glibc is imported: in a module that also sees NIO, the C `stat`
/// structure's fields belong to whichever C module declared it first.
package struct FileStatus: Sendable, Equatable {
    package var isRegularFile: Bool
    package var size: Int64
    /// The last modification, as seconds and nanoseconds since 1970 (`st_mtim`).
    package var modifiedSeconds: Int
    package var modifiedNanoseconds: Int

    /// The status of `path` itself (a symbolic link is not followed), or `nil` when nothing is
    /// there.
    package static func ofLink(_ path: String) throws(SystemCallError) -> FileStatus? {
        var info = stat()
        do {
            try SystemCall.check("lstat", path: path) { lstat(path, &info) }
        } catch where error.errnoCode == ENOENT {
            return nil
        }
        return FileStatus(
            isRegularFile: info.st_mode & S_IFMT == S_IFREG,
            size: Int64(info.st_size),
            modifiedSeconds: info.st_mtim.tv_sec,
            modifiedNanoseconds: info.st_mtim.tv_nsec
        )
    }

    /// How long ago, by the wall clock (`CLOCK_REALTIME`), the file was last modified; negative
    /// for a modification time in the future.
    package var age: Duration {
        var now = timespec()
        clock_gettime(CLOCK_REALTIME, &now)
        return .seconds(now.tv_sec - modifiedSeconds) + .nanoseconds(now.tv_nsec - modifiedNanoseconds)
    }
}
