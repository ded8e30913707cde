/// `io.errorbus.varlink`: the errors with which ``VarlinkServer`` answers a connection that breaks
/// the protocol or a limit, before it closes the connection. Every server serves its definition.
public enum VarlinkServerErrors {
    /// `io.errorbus.varlink`
    public static let interfaceName = "io.errorbus.varlink"

    /// The parameters of the errors about a limit.
    public struct Limit: Codable, Sendable, Hashable {
        /// The limit that was reached.
        public var maximum: Int
        /// Creates the parameters.
        public init(maximum: Int) { self.maximum = maximum }
    }

    /// `MessageTooLarge`: a message exceeded the server's maximum size (in bytes). The server
    /// closes the connection after sending it.
    public static let messageTooLarge = VarlinkErrorDeclaration<Limit>(
        interface: interfaceName,
        name: "MessageTooLarge",
        documentation: "A message exceeded the maximum size, in bytes. The connection is closed."
    )

    /// `InvalidMessage`: a message was not a JSON object with a `method` string. The server
    /// closes the connection after sending it.
    public static let invalidMessage = VarlinkErrorDeclaration<VarlinkEmpty>(
        interface: interfaceName,
        name: "InvalidMessage",
        documentation: "A message was not a valid method call. The connection is closed."
    )

    /// `TooManyConnections`: the server has its maximum number of connections. It sends this as
    /// soon as it accepts the connection, without waiting for a call, then closes it.
    public static let tooManyConnections = VarlinkErrorDeclaration<Limit>(
        interface: interfaceName,
        name: "TooManyConnections",
        documentation: "The server has reached its maximum number of connections. The connection\nis closed."
    )

    /// `InternalError`: the method failed in a way it did not describe. Details are in the
    /// server's log, not in the reply.
    public static let internalError = VarlinkErrorDeclaration<VarlinkEmpty>(
        interface: interfaceName,
        name: "InternalError",
        documentation: "The method failed unexpectedly; the service's log has the details."
    )

    /// The interface's declaration.
    static let interface: VarlinkInterface = {
        do {
            return try VarlinkInterface(
                name: interfaceName,
                documentation: "Errors of the errorbus Varlink server about the connection itself.",
                members: [.error(messageTooLarge), .error(invalidMessage), .error(tooManyConnections), .error(internalError)]
            )
        } catch {
            // The declaration above is fixed; the tests parse its definition.
            fatalError("io.errorbus.varlink is declared wrongly: \(error)")
        }
    }()
}
