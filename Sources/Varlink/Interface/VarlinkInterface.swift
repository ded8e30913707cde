/// A Varlink interface: a named set of methods, errors and types, with its definition in Varlink's
/// interface definition language, which the server serves from
/// `org.varlink.service.GetInterfaceDescription`.
///
/// ```swift
/// let notes = try VarlinkInterface(
///     name: "org.example.notes",
///     documentation: "Short notes, kept in memory.",
///     members: [.method(Notes.add), .method(Notes.get), .method(Notes.watch), .error(Notes.noSuchNote)]
/// )
/// ```
///
/// The types of parameters, replies and errors are derived from their Swift types: fields in
/// the order `init(from:)` reads them, `Optional` as `?T`, arrays as `[]T`, `[String: T]` as
/// `[string]T`, ``VarlinkEnum`` types as enums, ``VarlinkNamedType`` types declared once with
/// `type Name` and referred to by name, other structs written out in place.
public struct VarlinkInterface: Sendable, CustomStringConvertible {
    /// The interface's name, e.g. `org.example.notes`.
    public let name: String
    /// The interface's documentation, written as comments above the `interface` line.
    public let documentation: String
    /// The interface definition, in Varlink's IDL.
    public let description: String
    /// The methods, by name, with the names of their parameters.
    let methods: [String: MethodSignature]

    /// What the router needs to know of a method to decode its calls.
    struct MethodSignature: Sendable {
        /// The fields of the parameters struct: anything else in a call is an invalid parameter.
        let parameterNames: Set<String>
    }

    /// Declares an interface.
    ///
    /// - Throws: ``VarlinkDeclarationError`` if a name is invalid or declared twice, if a member
    ///   belongs to another interface, or if a type cannot be derived or is not a struct where
    ///   one is required.
    public init(name: String, documentation: String = "", members: [Member]) throws {
        guard VarlinkNames.isInterfaceName(name) else {
            throw VarlinkDeclarationError.invalidName(name, expected: "an interface name (reverse domain, e.g. com.example.Service)")
        }
        let describer = VarlinkTypeDescriber()
        var memberNames: Set<String> = []
        var typeDocumentation: [String: String] = [:]
        var methods: [String: MethodSignature] = [:]
        var methodText: [String] = []
        var errorText: [String] = []

        // Named types first, so that the definition lists them in the order given.
        for member in members {
            guard case .type(let describe) = member.kind else { continue }
            let declared = try describe(describer)
            guard case .named(let typeName) = declared else {
                throw VarlinkDeclarationError.unsupportedType(Any.self, reason: "\(declared) is not a named type")
            }
            typeDocumentation[typeName] = member.documentation
        }
        for member in members {
            switch member.kind {
            case .type:
                continue
            case .method(let describe):
                try Self.check(member, of: name, into: &memberNames)
                let (parameters, reply) = try describe(describer)
                methods[member.name] = MethodSignature(parameterNames: Set(parameters.map(\.name)))
                var text = Self.comment(member.documentation)
                text += "method \(member.name)"
                VarlinkType.struct(parameters).renderTopLevel(into: &text, startingAt: text.currentColumn)
                text += " -> "
                VarlinkType.struct(reply).renderTopLevel(into: &text, startingAt: text.currentColumn)
                methodText.append(text)
            case .error(let describe):
                try Self.check(member, of: name, into: &memberNames)
                let parameters = try describe(describer)
                var text = Self.comment(member.documentation)
                text += "error \(member.name) "
                VarlinkType.struct(parameters).renderTopLevel(into: &text, startingAt: text.currentColumn)
                errorText.append(text)
            }
        }

        var typeText: [String] = []
        for (typeName, type) in describer.namedTypes {
            guard memberNames.insert(typeName).inserted else { throw VarlinkDeclarationError.duplicateName(typeName) }
            var text = Self.comment(typeDocumentation[typeName] ?? "")
            text += "type \(typeName) "
            type.renderTopLevel(into: &text, startingAt: text.currentColumn)
            typeText.append(text)
        }

        var definition = Self.comment(documentation)
        definition += "interface \(name)\n"
        for text in typeText + methodText + errorText {
            definition += "\n"
            definition += text
            definition += "\n"
        }

        self.name = name
        self.documentation = documentation
        self.description = definition
        self.methods = methods
    }

    private static func check(_ member: Member, of interface: String, into names: inout Set<String>) throws {
        guard member.interface == interface else {
            throw VarlinkDeclarationError.invalidName(
                "\(member.interface).\(member.name)",
                expected: "a member of interface \(interface)"
            )
        }
        guard VarlinkNames.isMemberName(member.name) else {
            throw VarlinkDeclarationError.invalidName(member.name, expected: "a member name (method or error)")
        }
        guard names.insert(member.name).inserted else {
            throw VarlinkDeclarationError.duplicateName(member.name)
        }
    }

    /// Documentation as IDL comment lines, each followed by a newline.
    private static func comment(_ documentation: String) -> String {
        guard !documentation.isEmpty else { return "" }
        var text = ""
        for line in documentation.split(separator: "\n", omittingEmptySubsequences: false) {
            text += line.isEmpty ? "#\n" : "# \(line)\n"
        }
        return text
    }
}

extension String {
    /// The number of characters after the last newline.
    fileprivate var currentColumn: Int {
        guard let newline = lastIndex(of: "\n") else { return count }
        return distance(from: index(after: newline), to: endIndex)
    }
}
