extension VarlinkInterface {
    /// A method, error or named type of an interface.
    public struct Member: Sendable {
        enum Kind: Sendable {
            /// Derives the fields of the parameters and of the reply.
            case method(@Sendable (VarlinkTypeDescriber) throws -> (parameters: [VarlinkField], reply: [VarlinkField]))
            /// Derives the fields of the error's parameters.
            case error(@Sendable (VarlinkTypeDescriber) throws -> [VarlinkField])
            /// Declares the named type and returns the reference to it.
            case type(@Sendable (VarlinkTypeDescriber) throws -> VarlinkType)
        }

        let kind: Kind
        let interface: String
        let name: String
        let documentation: String

        /// A method.
        public static func method<Parameters, Reply>(_ method: VarlinkMethod<Parameters, Reply>) -> Member {
            Member(
                kind: .method { describer in
                    (
                        try describer.fields(of: Parameters.self, role: "parameters"),
                        try describer.fields(of: Reply.self, role: "reply")
                    )
                },
                interface: method.interface,
                name: method.name,
                documentation: method.documentation
            )
        }

        /// An error.
        public static func error<Parameters>(_ error: VarlinkErrorDeclaration<Parameters>) -> Member {
            Member(
                kind: .error { describer in try describer.fields(of: Parameters.self, role: "error parameters") },
                interface: error.interface,
                name: error.name,
                documentation: error.documentation
            )
        }

        /// A named type, declared even if no method or error uses it, and documented.
        ///
        /// Named types that methods and errors use are declared without being listed; list them
        /// to give them documentation or a place in the order of the definition.
        public static func type<T: VarlinkNamedType & Sendable>(_ type: T.Type, documentation: String = "") -> Member {
            Member(
                kind: .type { describer in try describer.describe(T.self) },
                interface: "",
                name: T.varlinkTypeName,
                documentation: documentation
            )
        }
    }
}

extension VarlinkTypeDescriber {
    /// The fields of a type that must be a struct: method parameters and replies, error parameters.
    func fields<T: Decodable>(of type: T.Type, role: String) throws -> [VarlinkField] {
        let described = try describe(type)
        guard case .struct(let fields) = resolve(described) else {
            throw VarlinkDeclarationError.notAStruct(T.self, role: role, found: described)
        }
        return fields
    }
}
