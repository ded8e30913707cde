import NIOCore

#if canImport(Glibc)
import Glibc
#endif

extension Channel {
    /// The credentials of the process at the other end of this Unix socket (`SO_PEERCRED`).
    func peerCredentials() -> EventLoopFuture<VarlinkPeerCredentials> {
        #if os(Linux)
        guard let provider = self as? any SocketOptionProvider else {
            return eventLoop.makeFailedFuture(ChannelError.operationUnsupported)
        }
        let credentials: EventLoopFuture<UCred> = provider.unsafeGetSocketOption(
            level: SocketOptionLevel(SOL_SOCKET),
            name: SocketOptionName(SO_PEERCRED)
        )
        return credentials.map { VarlinkPeerCredentials(pid: $0.pid, uid: $0.uid, gid: $0.gid) }
        #else
        // Only Linux has SO_PEERCRED; elsewhere the peer is nobody in particular, never root.
        return eventLoop.makeSucceededFuture(VarlinkPeerCredentials(pid: 0, uid: .max, gid: .max))
        #endif
    }
}

/// `struct ucred` of <sys/socket.h> on Linux, which Swift's Glibc module does not import
/// (it is behind `_GNU_SOURCE`): the same three 32-bit fields in the same order.
private struct UCred: Sendable {
    var pid: Int32 = 0
    var uid: UInt32 = 0
    var gid: UInt32 = 0
}
