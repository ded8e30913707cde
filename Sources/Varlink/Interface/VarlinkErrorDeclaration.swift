/// An error a Varlink interface declares: its name, its documentation and the Swift type of its
/// parameters (``VarlinkEmpty`` for none).
///
/// A method handler throws ``error(_:)``; a client recognises it with ``matches(_:)`` and reads
/// its parameters with ``parameters(of:)``.
public struct VarlinkErrorDeclaration<Parameters: Codable & Sendable>: Sendable {
    /// The name of the interface the error belongs to.
    public let interface: String
    /// The error's name within its interface, e.g. `NoSuchNote`.
    public let name: String
    /// Documentation, written as comments above the error in the interface definition.
    public let documentation: String

    /// The name used on the wire: `interface.Error`.
    public var qualifiedName: String { "\(interface).\(name)" }

    /// Declares an error. The names are checked when it is added to a ``VarlinkInterface``.
    public init(interface: String, name: String, documentation: String = "", parameters: Parameters.Type = Parameters.self) {
        self.interface = interface
        self.name = name
        self.documentation = documentation
    }

    /// The error with these parameters, to throw from a method handler.
    public func error(_ parameters: Parameters) -> VarlinkError {
        VarlinkError(name: qualifiedName, encoding: parameters)
    }

    /// Whether `error` is this error.
    public func matches(_ error: VarlinkError) -> Bool {
        error.name == qualifiedName
    }

    /// The parameters of `error` if it is this error, `nil` if it is another one.
    public func parameters(of error: VarlinkError) throws -> Parameters? {
        guard matches(error) else { return nil }
        return try error.decodeParameters(as: Parameters.self)
    }
}

extension VarlinkErrorDeclaration where Parameters == VarlinkEmpty {
    /// The error, to throw from a method handler.
    public func error() -> VarlinkError {
        VarlinkError(name: qualifiedName, encoding: VarlinkEmpty())
    }
}
