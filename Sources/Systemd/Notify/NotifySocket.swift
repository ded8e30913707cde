import Glibc

/// Sends one notify datagram to a socket named by path, the way `sd_notify` does, but without
/// reading `$NOTIFY_SOCKET` and without ever blocking.
enum NotifySocket {
    /// Sends `state` to the `AF_UNIX` datagram socket at `path` (`@name` for the abstract namespace).
    static func send(_ state: String, to path: String) throws(SystemdError) {
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        let capacity = MemoryLayout.size(ofValue: address.sun_path)
        var pathBytes = Array(path.utf8)
        let abstract = pathBytes.first == UInt8(ascii: "@")
        if abstract { pathBytes[0] = 0 }
        // A path needs its terminating NUL inside sun_path; an abstract name does not have one.
        guard !pathBytes.isEmpty, !pathBytes.dropFirst().contains(0) else {
            throw SystemdError.invalidArgument("notify socket path \"\(path)\"", errno: EINVAL)
        }
        guard pathBytes.count + (abstract ? 0 : 1) <= capacity else {
            throw SystemdError.invalidArgument("notify socket path \"\(path)\"", errno: ENAMETOOLONG)
        }
        withUnsafeMutableBytes(of: &address.sun_path) { sunPath in
            sunPath.copyBytes(from: pathBytes)
        }
        let length = socklen_t(
            MemoryLayout<sockaddr_un>.offset(of: \.sun_path)! + pathBytes.count + (abstract ? 0 : 1)
        )

        let descriptor = try Posix.socket(domain: AF_UNIX, type: CInt(SOCK_DGRAM.rawValue) | CInt(SOCK_CLOEXEC.rawValue))
        defer { Posix.close(descriptor) }
        let sent = Array(state.utf8).withUnsafeBytes { bytes in
            withUnsafePointer(to: &address) { address in
                Result { () throws(SystemdError) in
                    try Posix.sendto(
                        descriptor,
                        bytes,
                        flags: CInt(MSG_NOSIGNAL) | CInt(MSG_DONTWAIT),
                        to: address,
                        length: length
                    )
                }
            }
        }
        _ = try sent.get()
    }
}
