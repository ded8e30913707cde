import CNetlink

import ErrorBusSupport
#if canImport(Glibc)
import Glibc
#endif

/// A `NETLINK_ROUTE` socket subscribed to the kernel's notifications of link, address and route
/// changes (rtnetlink(7)).
enum NetlinkSocket {
    /// Links (up, down, added, removed), IPv4 and IPv6 addresses, IPv4 and IPv6 routes.
    static let routeChangeGroups = UInt32(
        RTMGRP_LINK | RTMGRP_IPV4_IFADDR | RTMGRP_IPV6_IFADDR | RTMGRP_IPV4_ROUTE | RTMGRP_IPV6_ROUTE
    )

    /// Opens, sizes and binds the socket; the caller owns the returned descriptor.
    ///
    /// Non-blocking and close-on-exec. The receive buffer is raised to `receiveBufferSize` (the
    /// kernel caps it at `net.core.rmem_max`) so a burst — a VPN coming up installs hundreds of
    /// routes — fits; when one does not, reads fail with `ENOBUFS`, which the monitor treats as
    /// a change.
    static func open(groups: UInt32 = routeChangeGroups, receiveBufferSize: Int = 1 << 20) throws(SystemCallError) -> CInt {
        let type = CInt(SOCK_RAW.rawValue) | CInt(SOCK_CLOEXEC.rawValue) | CInt(SOCK_NONBLOCK.rawValue)
        let descriptor = try SystemCall.check("socket(AF_NETLINK, NETLINK_ROUTE)") { socket(AF_NETLINK, type, NETLINK_ROUTE) }
        do {
            var size = CInt(clamping: receiveBufferSize)
            _ = try SystemCall.check("setsockopt(SO_RCVBUF)") {
                setsockopt(descriptor, SOL_SOCKET, SO_RCVBUF, &size, socklen_t(MemoryLayout<CInt>.size))
            }
            var address = sockaddr_nl()
            address.nl_family = sa_family_t(AF_NETLINK)
            address.nl_pid = 0  // the kernel assigns the port id
            address.nl_groups = groups
            _ = try SystemCall.check("bind(AF_NETLINK)") {
                withUnsafePointer(to: &address) { pointer in
                    pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                        bind(descriptor, $0, socklen_t(MemoryLayout<sockaddr_nl>.size))
                    }
                }
            }
        } catch {
            try? SystemCall.close(descriptor)
            throw error
        }
        return descriptor
    }
}
