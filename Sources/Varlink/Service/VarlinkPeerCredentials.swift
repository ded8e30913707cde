/// Who is at the other end of a Unix socket connection, as the kernel reports it (`SO_PEERCRED`):
/// the credentials of the process that connected, taken when it connected.
public struct VarlinkPeerCredentials: Sendable, Hashable, CustomStringConvertible {
    /// The process id of the peer.
    public let pid: Int32
    /// The effective user id of the peer.
    public let uid: UInt32
    /// The effective group id of the peer.
    public let gid: UInt32

    /// Creates credentials.
    public init(pid: Int32, uid: UInt32, gid: UInt32) {
        self.pid = pid
        self.uid = uid
        self.gid = gid
    }

    /// Whether the peer runs as root.
    public var isRoot: Bool { uid == 0 }

    public var description: String { "pid=\(pid) uid=\(uid) gid=\(gid)" }
}
