#if canImport(Glibc)
import Glibc
#endif

extension SystemCall {
    /// Run as root, takes the user and group that own `path` (when that is not root), giving up
    /// every supplementary group: what the process creates from then on is theirs. Does nothing
    /// when not root.
    package static func becomeOwner(of path: String) throws(SystemCallError) {
        guard geteuid() == 0, let owner = try stat(path), owner.st_uid != 0 else { return }
        try check("setgroups", path: path) { setgroups(0, nil) }
        try check("setgid", path: path) { setgid(owner.st_gid) }
        try check("setuid", path: path) { setuid(owner.st_uid) }
    }
}
