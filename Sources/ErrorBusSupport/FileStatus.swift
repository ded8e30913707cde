#if canImport(Glibc)
import Glibc
#endif

/// What `lstat(2)` or `fstat(2)` says of a file: its type, identity, size and modification time.
///
/// Read here, where only Glibc is imported: in a module that also sees NIO, the C `stat`
/// structure's fields belong to whichever C module declared it first.
package struct FileStatus: Sendable, Equatable {
    package var isRegularFile: Bool
    package var size: Int64
    /// The last modification, as seconds and nanoseconds since 1970 (`st_mtim`).
    package var modifiedSeconds: Int
    package var modifiedNanoseconds: Int
    /// The file system and the inode: another file renamed into this one's place has others.
    package var device: UInt64 = 0
    package var inode: UInt64 = 0
    /// What the entry is when it is not a regular file ("a directory", "a symbolic link", "a
    /// FIFO", …); `nil` for a regular file.
    package var otherType: String? = nil

    package init(isRegularFile: Bool, size: Int64, modifiedSeconds: Int, modifiedNanoseconds: Int) {
        self.isRegularFile = isRegularFile
        self.size = size
        self.modifiedSeconds = modifiedSeconds
        self.modifiedNanoseconds = modifiedNanoseconds
    }

    private init(_ info: stat) {
        self.init(
            isRegularFile: info.st_mode & S_IFMT == S_IFREG,
            size: Int64(info.st_size),
            modifiedSeconds: info.st_mtim.tv_sec,
            modifiedNanoseconds: info.st_mtim.tv_nsec
        )
        device = UInt64(info.st_dev)
        inode = UInt64(info.st_ino)
        otherType = Self.typeName(info.st_mode & S_IFMT)
    }

    /// The status of `path` itself (a symbolic link is not followed), or `nil` when nothing is
    /// there.
    package static func ofLink(_ path: String) throws(SystemCallError) -> FileStatus? {
        var info = stat()
        do {
            try SystemCall.check("lstat", path: path) { lstat(path, &info) }
        } catch where error.errnoCode == ENOENT {
            return nil
        }
        return FileStatus(info)
    }

    /// The status of the open file `descriptor` (`fstat(2)`).
    package static func of(descriptor: CInt, path: String) throws(SystemCallError) -> FileStatus {
        var info = stat()
        try SystemCall.check("fstat", path: path) { fstat(descriptor, &info) }
        return FileStatus(info)
    }

    /// Whether the file is still the one `earlier` described: the same file system and inode,
    /// size and modification time.
    package func isSameContent(as earlier: FileStatus) -> Bool {
        device == earlier.device && inode == earlier.inode && size == earlier.size
            && modifiedSeconds == earlier.modifiedSeconds && modifiedNanoseconds == earlier.modifiedNanoseconds
    }

    private static func typeName(_ type: mode_t) -> String? {
        switch type {
        case S_IFREG: nil
        case S_IFDIR: "a directory"
        case S_IFLNK: "a symbolic link"
        case S_IFIFO: "a FIFO"
        case S_IFSOCK: "a socket"
        case S_IFCHR: "a character device"
        case S_IFBLK: "a block device"
        default: "not a regular file"
        }
    }

    /// How long ago, by the wall clock (`CLOCK_REALTIME`), the file was last modified; negative
    /// for a modification time in the future.
    package var age: Duration {
        var now = timespec()
        clock_gettime(CLOCK_REALTIME, &now)
        return .seconds(now.tv_sec - modifiedSeconds) + .nanoseconds(now.tv_nsec - modifiedNanoseconds)
    }
}
