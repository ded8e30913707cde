#if canImport(Glibc)
import Glibc
#endif
import Varlink

/// Who may call the mutating methods of `io.errorbus.Control`: root, and the members of
/// `control.group`. Reading methods are open to anyone who can open the socket.
///
/// The caller is known by the kernel's `SO_PEERCRED` (uid and gid when it connected). Its
/// supplementary groups come from the user database (`getgrouplist`), not from `/proc/PID/status`:
/// under the unit's `ProtectProc=invisible` errorbusd cannot read other users' processes.
struct ControlAuthorization: Sendable {
    /// `control.group` as configured; `nil` for root only.
    let groupName: String?
    /// Its gid, resolved when errorbusd started; `nil` if there is no such group (root only).
    let groupID: gid_t?

    /// Resolves `group` (a name or a numeric gid) in the group database.
    init(group: String?) {
        groupName = group
        groupID = group.flatMap(UserDatabase.groupID(named:))
    }

    /// Whether `peer` may call a mutating method: root, errorbusd's own user, and the members of
    /// `control.group`.
    func mayChange(_ peer: VarlinkPeerCredentials) -> Bool {
        // Root, and errorbusd's own user: the unit's ExecReload= runs `errorbusctl reload` as it.
        if peer.isRoot || peer.uid == getuid() { return true }
        guard let groupID else { return false }
        if peer.gid == groupID { return true }
        return UserDatabase.groups(ofUser: peer.uid).contains(groupID)
    }
}

/// The user and group databases (NSS: `/etc/passwd`, `/etc/group`, systemd-userdb …), through
/// their reentrant calls.
enum UserDatabase {
    /// A group's gid by name, or the number itself when `name` is numeric; `nil` if unknown.
    static func groupID(named name: String) -> gid_t? {
        if let number = UInt32(name) { return number }
        return withBuffer { buffer in
            var group = group()
            var result: UnsafeMutablePointer<group>?
            let status = getgrnam_r(name, &group, buffer.baseAddress!, buffer.count, &result)
            return (status, result.map { _ in group.gr_gid })
        }
    }

    /// Every group a user belongs to (primary and supplementary); empty for an unknown uid.
    static func groups(ofUser uid: uid_t) -> [gid_t] {
        let user: (name: String, gid: gid_t)? = withBuffer { buffer in
            var entry = passwd()
            var result: UnsafeMutablePointer<passwd>?
            let status = getpwuid_r(uid, &entry, buffer.baseAddress!, buffer.count, &result)
            return (status, result.flatMap { _ in entry.pw_name.map { (String(cString: $0), entry.pw_gid) } })
        }
        guard let user else { return [] }
        var count: CInt = 32
        while count <= 65_536 {
            var groups = [gid_t](repeating: 0, count: Int(count))
            var found = count
            if getgrouplist(user.name, user.gid, &groups, &found) != -1 {
                return Array(groups.prefix(Int(found)))
            }
            // Too small: `found` says how many there are.
            count = max(found, count * 2)
        }
        return [user.gid]
    }

    /// Runs a `*_r` lookup with a buffer that grows while it answers `ERANGE`; `nil` when the
    /// entry does not exist or the lookup fails.
    private static func withBuffer<Result>(_ body: (UnsafeMutableBufferPointer<CChar>) -> (CInt, Result?)) -> Result? {
        var size = 1024
        while size <= 1 << 20 {
            let buffer = UnsafeMutableBufferPointer<CChar>.allocate(capacity: size)
            defer { buffer.deallocate() }
            let (status, result) = body(buffer)
            if status == ERANGE {
                size *= 2
                continue
            }
            return status == 0 ? result : nil
        }
        return nil
    }
}
