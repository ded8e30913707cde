extension VarlinkServer {
    /// Where a server listens and the limits it enforces on each connection.
    public struct Configuration: Sendable {
        /// Where to listen.
        public var address: Address
        /// The longest message accepted, in bytes. A longer one is answered with
        /// `MessageTooLarge` (``VarlinkServerErrors``) and the connection closed. Default: 1 MiB.
        public var maximumMessageSize: Int
        /// The most connections open at once. Beyond it, a new connection is sent
        /// `TooManyConnections` (``VarlinkServerErrors``) at once and closed. Default: 4096.
        public var maximumConnections: Int
        /// The most connections one user (the peer's uid) may have open at once, unless
        /// ``isPrivileged`` says it is privileged. Default: 1024, as systemd's Varlink servers.
        public var maximumConnectionsPerUser: Int
        /// Connections of ``maximumConnections`` that only privileged peers may use: every other
        /// peer together may hold at most `maximumConnections - reservedConnections`, so that
        /// local users cannot crowd out the administrator. Default: 0.
        public var reservedConnections: Int
        /// Which peers are exempt from the per-user limit and may use the reserved connections.
        /// Asked only for a connection that would otherwise be refused; it runs on an event
        /// loop, so it must be quick. Default: root.
        public var isPrivileged: @Sendable (VarlinkPeerCredentials) -> Bool
        /// The time a new connection may take to send its first message: a client that connects
        /// and sends nothing is disconnected after it, so idle connections cannot pile up.
        /// Default: 10 seconds.
        public var firstMessageTimeout: Duration
        /// The time a message may take to arrive once its first byte has: a client that sends
        /// part of a message and then stalls is disconnected after it. Default: 5 seconds.
        public var messageTimeout: Duration
        /// The time a connection may stay unable to take more output: a client that stops reading
        /// replies (a stream, or pipelined calls) is disconnected after it, so it holds at most
        /// the socket's buffers. Default: 10 seconds.
        public var writeTimeout: Duration

        /// A configuration with the default limits.
        public init(
            address: Address,
            maximumMessageSize: Int = 1 << 20,
            maximumConnections: Int = 4096,
            maximumConnectionsPerUser: Int = 1024,
            reservedConnections: Int = 0,
            isPrivileged: @escaping @Sendable (VarlinkPeerCredentials) -> Bool = { $0.isRoot },
            firstMessageTimeout: Duration = .seconds(10),
            messageTimeout: Duration = .seconds(5),
            writeTimeout: Duration = .seconds(10)
        ) {
            self.address = address
            self.maximumMessageSize = maximumMessageSize
            self.maximumConnections = maximumConnections
            self.maximumConnectionsPerUser = maximumConnectionsPerUser
            self.reservedConnections = reservedConnections
            self.isPrivileged = isPrivileged
            self.firstMessageTimeout = firstMessageTimeout
            self.messageTimeout = messageTimeout
            self.writeTimeout = writeTimeout
        }
    }

    /// Where a server listens: a socket path it binds, or a socket that is already listening.
    public struct Address: Sendable, Hashable, CustomStringConvertible {
        enum Kind: Sendable, Hashable {
            case path(String, mode: UInt32)
            case descriptor(CInt)
        }

        let kind: Kind

        /// Binds a Unix socket at `path` and sets its permissions to `mode`.
        ///
        /// A socket file already at `path` is removed if no server listens on it (a stale one);
        /// if one does, or if the path is not a socket, the server does not start. The file is
        /// removed when the server stops. The default mode lets anyone connect: authorize
        /// callers by their peer credentials, or restrict the mode.
        public static func unixSocket(path: String, mode: UInt32 = 0o666) -> Address {
            Address(kind: .path(path, mode: mode))
        }

        /// Adopts a Unix socket that is already bound and listening, such as one systemd passes by
        /// socket activation (`LISTEN_FDS`, first descriptor 3). The server takes ownership of the
        /// descriptor.
        public static func listeningSocket(descriptor: CInt) -> Address {
            Address(kind: .descriptor(descriptor))
        }

        public var description: String {
            switch kind {
            case .path(let path, _): "unix:\(path)"
            case .descriptor(let descriptor): "fd:\(descriptor)"
            }
        }
    }
}
