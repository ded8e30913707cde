import ErrorBusSupport
import Glibc
import NIOCore
import Synchronization

import ErrorBusDaemon

/// A `SOCK_SEQPACKET` socket pair standing in for netlink: one datagram per read, and an end of
/// file when the test's end closes.
final class SocketPair: Sendable {
    /// Handed to the monitor, which closes it.
    let monitorEnd: CInt
    private let testEnd: Mutex<CInt?>

    init() throws {
        var ends: [CInt] = [-1, -1]
        guard socketpair(AF_UNIX, CInt(SOCK_SEQPACKET.rawValue) | CInt(SOCK_CLOEXEC.rawValue), 0, &ends) == 0 else {
            throw SystemCallError(call: "socketpair", errnoCode: errno)
        }
        monitorEnd = ends[0]
        testEnd = Mutex(ends[1])
    }

    func send(_ datagram: ByteBuffer) throws {
        try testEnd.withLock { descriptor in
            guard let descriptor else { throw SystemCallError(call: "send", errnoCode: EBADF) }
            let sent = datagram.withUnsafeReadableBytes { Glibc.send(descriptor, $0.baseAddress, $0.count, 0) }
            guard sent == datagram.readableBytes else { throw SystemCallError(call: "send", errnoCode: errno) }
        }
    }

    /// Closes the test's end (once).
    func closeTestEnd() {
        testEnd.withLock { descriptor in
            if let open = descriptor { close(open) }
            descriptor = nil
        }
    }
}
