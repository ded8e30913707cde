internal import CSystemd

import Glibc

/// One wrapper per libsystemd function the module calls.
///
/// libsystemd returns `-errno` on failure and never sets `errno` for the caller; every wrapper goes
/// through ``check(_:_:)``, which turns a negative return into a ``SystemdError`` naming the call.
enum Libsystemd {
    /// Runs one libsystemd call and throws if it returned a negative errno.
    @inline(__always)
    static func check(_ call: StaticString, _ body: () -> CInt) throws(SystemdError) -> CInt {
        let result = body()
        if result < 0 {
            throw SystemdError.callFailed(call.description, errno: -result)
        }
        return result
    }

    /// `sd_notify(0, state)`: sends `state` to the socket named by `$NOTIFY_SOCKET`.
    ///
    /// The environment is left in place (`unset_environment = 0`): `unsetenv` races with every
    /// `getenv` in other threads, and later notifications (`WATCHDOG=1`, `STOPPING=1`) need it.
    ///
    /// - Returns: `false` when `$NOTIFY_SOCKET` is not set, `true` when the datagram was sent.
    static func notify(_ state: String) throws(SystemdError) -> Bool {
        try check("sd_notify") { sd_notify(0, state) } > 0
    }

    /// `sd_watchdog_enabled(0, &usec)`: the watchdog interval in microseconds when
    /// `$WATCHDOG_USEC` is set and `$WATCHDOG_PID` (if set) is this process, `nil` otherwise.
    static func watchdogEnabled() throws(SystemdError) -> UInt64? {
        var usec: UInt64 = 0
        let enabled = try check("sd_watchdog_enabled") { sd_watchdog_enabled(0, &usec) }
        return enabled > 0 ? usec : nil
    }

    /// `sd_listen_fds_with_names(0, &names)`: the descriptors passed by socket activation
    /// (starting at `SD_LISTEN_FDS_START`) with their names, `"unknown"` where none was given.
    static func listenFileDescriptorsWithNames() throws(SystemdError) -> [(CInt, String)] {
        var names: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>? = nil
        let count = try check("sd_listen_fds_with_names") { sd_listen_fds_with_names(0, &names) }
        guard count > 0, let names else { return [] }
        defer {
            // libsystemd allocated a NULL-terminated strv; the caller frees each string and the array.
            var index = 0
            while let name = names[index] {
                free(name)
                index += 1
            }
            free(names)
        }
        return (0..<count).map { index in
            (SD_LISTEN_FDS_START + index, names[Int(index)].map { String(cString: $0) } ?? "unknown")
        }
    }

    /// `sd_journal_sendv(iov, n)`: one journal entry, one `FIELD=value` per iovec.
    ///
    /// libsystemd returns 0 without sending anything when `/run/systemd/journal/socket` does not
    /// exist; callers that must not lose entries check for the socket themselves.
    static func journalSendv(_ fields: UnsafeBufferPointer<iovec>) throws(SystemdError) {
        _ = try check("sd_journal_sendv") { sd_journal_sendv(fields.baseAddress, CInt(fields.count)) }
    }
}
