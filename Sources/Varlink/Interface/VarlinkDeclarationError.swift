/// A mistake in the declaration of an interface or in the registration of its implementation.
///
/// These are programming errors, found when a server builds its ``VarlinkRouter`` at start-up.
public struct VarlinkDeclarationError: Error, Hashable, Sendable, CustomStringConvertible {
    private enum Code: Hashable, Sendable {
        case invalidName
        case duplicateName
        case unsupportedType
        case notAStruct
        case unknownInterface
        case unknownMethod
    }

    private let code: Code
    /// What is wrong, in words.
    public let message: String

    private init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

    public var description: String { message }

    /// A name does not follow the IDL's syntax.
    static func invalidName(_ name: String, expected: String) -> Self {
        Self(.invalidName, "'\(name)' is not a valid Varlink name: expected \(expected)")
    }

    /// Two members of one interface, or two interfaces of one router, have the same name.
    static func duplicateName(_ name: String) -> Self {
        Self(.duplicateName, "'\(name)' is declared twice")
    }

    /// A Swift type's Varlink type could not be derived.
    static func unsupportedType(_ type: Any.Type, reason: String) -> Self {
        Self(.unsupportedType, "cannot derive the Varlink type of \(type): \(reason)")
    }

    /// Method parameters, replies and error parameters must be structs.
    static func notAStruct(_ type: Any.Type, role: String, found: VarlinkType) -> Self {
        Self(.notAStruct, "the \(role) type \(type) must be a struct, but is \(found)")
    }

    /// A method is implemented for an interface that the router does not have.
    static func unknownInterface(_ name: String) -> Self {
        Self(.unknownInterface, "interface '\(name)' has not been added to the router")
    }

    /// A method is implemented that its interface does not declare.
    static func unknownMethod(_ name: String) -> Self {
        Self(.unknownMethod, "method '\(name)' is not declared by its interface")
    }
}
