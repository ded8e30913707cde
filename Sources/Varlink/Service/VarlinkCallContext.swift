public import Logging

/// What a method handler knows about the call besides its parameters.
public struct VarlinkCallContext: Sendable {
    /// The method's fully qualified name.
    public let method: String
    /// The credentials of the connected process, for authorization.
    public let peer: VarlinkPeerCredentials
    /// Whether the caller asked for more than one reply (`more`).
    public let more: Bool
    /// Whether the caller wants no reply at all (`oneway`): whatever the handler returns or throws
    /// is dropped.
    public let oneway: Bool
    /// The connection's logger, with the peer's credentials as metadata.
    public let logger: Logger

    /// Creates a context; servers do this, and tests that call handlers directly.
    public init(method: String, peer: VarlinkPeerCredentials, more: Bool = false, oneway: Bool = false, logger: Logger) {
        self.method = method
        self.peer = peer
        self.more = more
        self.oneway = oneway
        self.logger = logger
    }
}
