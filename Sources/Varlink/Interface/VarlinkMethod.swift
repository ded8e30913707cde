/// A method of a Varlink interface: its name, its documentation and the Swift types of its
/// parameters and reply.
///
/// The same declaration serves the server, to decode calls and answer them, and the client, to
/// make calls. Both types are `Codable` structs; their Varlink types are derived from them (see
/// ``VarlinkTypeRepresentable``). A method without parameters or reply fields uses
/// ``VarlinkEmpty``.
///
/// ```swift
/// static let get = VarlinkMethod<NoteID, Note>(
///     interface: "org.example.notes", name: "Get",
///     documentation: "The note with this id."
/// )
/// ```
public struct VarlinkMethod<Parameters: Codable & Sendable, Reply: Codable & Sendable>: Sendable {
    /// The name of the interface the method belongs to, e.g. `org.example.notes`.
    public let interface: String
    /// The method's name within its interface, e.g. `Get`.
    public let name: String
    /// Documentation, written as comments above the method in the interface definition.
    public let documentation: String

    /// The name used on the wire: `interface.Method`.
    public var qualifiedName: String { "\(interface).\(name)" }

    /// Declares a method. The names are checked when the method is added to a ``VarlinkInterface``.
    public init(
        interface: String,
        name: String,
        documentation: String = "",
        parameters: Parameters.Type = Parameters.self,
        reply: Reply.Type = Reply.self
    ) {
        self.interface = interface
        self.name = name
        self.documentation = documentation
    }
}
