public import Varlink

// sample: varlink-interface
/// `org.example.notes`: the methods, types and error of the interface.
///
/// Server and client share these declarations: the server implements the methods, the client
/// calls them, and the interface definition that `org.varlink.service.GetInterfaceDescription`
/// serves is derived from the Swift types, so the three cannot disagree.
public enum Notes {
    public static let interfaceName = "org.example.notes"

    /// A note, as every method replies. Its Varlink type is derived from the stored properties.
    public struct Note: Codable, Sendable, Equatable {
        public var id: Int
        public var text: String
        /// The user id of the process that added it.
        public var author: UInt32

        public init(id: Int, text: String, author: UInt32) {
            self.id = id
            self.text = text
            self.author = author
        }
    }

    public struct NewNote: Codable, Sendable, Equatable {
        public var text: String
        public init(text: String) { self.text = text }
    }

    /// The parameters of `Get` and of the error `NoSuchNote`.
    public struct NoteID: Codable, Sendable, Equatable {
        public var id: Int
        public init(id: Int) { self.id = id }
    }

    public static let add = VarlinkMethod<NewNote, Note>(
        interface: interfaceName,
        name: "Add",
        documentation: "Adds a note and returns it, with its id."
    )

    public static let get = VarlinkMethod<NoteID, Note>(
        interface: interfaceName,
        name: "Get",
        documentation: "The note with this id."
    )

    public static let watch = VarlinkMethod<VarlinkEmpty, Note>(
        interface: interfaceName,
        name: "Watch",
        documentation: "Every note, oldest first, then each new one as it is added; call it with 'more'."
    )

    public static let noSuchNote = VarlinkErrorDeclaration<NoteID>(
        interface: interfaceName,
        name: "NoSuchNote",
        documentation: "No note has this id."
    )

    /// The interface. Declaring it checks the names and derives the types, so a mistake in the
    /// declarations above throws here, when the server starts, not when a client calls.
    public static func interface() throws -> VarlinkInterface {
        try VarlinkInterface(
            name: interfaceName,
            documentation: "Short notes, kept in memory.",
            members: [.method(add), .method(get), .method(watch), .error(noSuchNote)]
        )
    }
}
// end sample
