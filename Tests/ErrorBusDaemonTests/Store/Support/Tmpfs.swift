import Foundation
import Glibc

/// A small tmpfs mounted for one test, so that the store meets a really full (or read-only)
/// file system. Needs root (CAP_SYS_ADMIN).
enum Tmpfs {
    /// Whether this process may mount file systems.
    static var isAvailable: Bool { geteuid() == 0 }

    /// Mounts a tmpfs of `size` bytes on a fresh directory, runs `body` with its path, and
    /// unmounts it whatever happens.
    static func with<T>(size: Int, _ body: (String) async throws -> T) async throws -> T {
        try await StoreTestDirectory.with { directory in
            let mountPoint = directory + "/tmpfs"
            try FileManager.default.createDirectory(atPath: mountPoint, withIntermediateDirectories: false)
            guard mount("tmpfs", mountPoint, "tmpfs", 0, "size=\(size),mode=0755") == 0 else {
                throw POSIXError(.init(rawValue: errno) ?? .EPERM)
            }
            defer {
                // Writable again first, so that a test failing half-way leaves nothing behind.
                _ = mount(nil, mountPoint, nil, UInt(MS_REMOUNT), "size=\(size)")
                _ = umount2(mountPoint, CInt(MNT_DETACH))
            }
            return try await body(mountPoint)
        }
    }

    /// Remounts the tmpfs at `mountPoint` read-only (`true`) or read-write.
    static func remount(_ mountPoint: String, readOnly: Bool) throws {
        let flags = UInt(MS_REMOUNT) | (readOnly ? UInt(MS_RDONLY) : 0)
        // EBUSY: a file on it is open for writing. Ours are closed, but a child process another
        // test is spawning holds a copy of every descriptor until its exec closes them
        // (O_CLOEXEC); there is no event for that, so try again a few times.
        for _ in 0..<100 {
            if mount(nil, mountPoint, nil, flags, nil) == 0 { return }
            guard errno == EBUSY else { break }
            usleep(20_000)
        }
        throw POSIXError(.init(rawValue: errno) ?? .EPERM)
    }
}
