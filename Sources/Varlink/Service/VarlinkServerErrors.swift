/// The errors with which a ``VarlinkServer`` answers a connection that breaks the protocol or a
/// limit, before it closes the connection, and a method that failed without saying how. Every
/// server serves their interface.
///
/// The interface is the server's own: name it in your reverse domain (say `com.example.varlink`)
/// with ``VarlinkRouter/init(vendor:product:version:url:errorInterface:)``.
/// A router given none uses ``defaultInterfaceName``.
public struct VarlinkServerErrors: Sendable {
    /// The interface's name.
    public let interfaceName: String

    /// `org.varlink.server`: the name of the server errors' interface when the router is given none.
    public static let defaultInterfaceName = "org.varlink.server"

    /// The errors, declared in the interface `interfaceName`.
    public init(interfaceName: String = Self.defaultInterfaceName) {
        self.interfaceName = interfaceName
    }

    /// The parameters of the errors about a limit.
    public struct Limit: Codable, Sendable, Hashable {
        /// The limit that was reached.
        public var maximum: Int
        /// Creates the parameters.
        public init(maximum: Int) { self.maximum = maximum }
    }

    /// `MessageTooLarge`: a message exceeded the server's maximum size (in bytes). The server
    /// closes the connection after sending it.
    public var messageTooLarge: VarlinkErrorDeclaration<Limit> {
        VarlinkErrorDeclaration(
            interface: interfaceName,
            name: "MessageTooLarge",
            documentation: "A message exceeded the maximum size, in bytes. The connection is closed."
        )
    }

    /// `InvalidMessage`: a message was not a JSON object with a `method` string. The server
    /// closes the connection after sending it.
    public var invalidMessage: VarlinkErrorDeclaration<VarlinkEmpty> {
        VarlinkErrorDeclaration(
            interface: interfaceName,
            name: "InvalidMessage",
            documentation: "A message was not a valid method call. The connection is closed."
        )
    }

    /// `TooManyConnections`: the server has its maximum number of connections. It sends this as
    /// soon as it accepts the connection, without waiting for a call, then closes it.
    public var tooManyConnections: VarlinkErrorDeclaration<Limit> {
        VarlinkErrorDeclaration(
            interface: interfaceName,
            name: "TooManyConnections",
            documentation: "The server has reached its maximum number of connections. The connection\nis closed."
        )
    }

    /// `InternalError`: the method failed in a way it did not describe. Details are in the
    /// server's log, not in the reply.
    public var internalError: VarlinkErrorDeclaration<VarlinkEmpty> {
        VarlinkErrorDeclaration(
            interface: interfaceName,
            name: "InternalError",
            documentation: "The method failed unexpectedly; the service's log has the details."
        )
    }

    /// The interface's declaration.
    var interface: VarlinkInterface {
        get throws {
            try VarlinkInterface(
                name: interfaceName,
                documentation: "Errors of the Varlink server about the connection itself.",
                members: [.error(messageTooLarge), .error(invalidMessage), .error(tooManyConnections), .error(internalError)]
            )
        }
    }
}
