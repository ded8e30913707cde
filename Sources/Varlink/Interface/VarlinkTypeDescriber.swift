/// Derives Varlink types from Swift types and collects the named types they use.
///
/// ``VarlinkInterface`` makes one describer per interface. A ``VarlinkTypeRepresentable`` type
/// receives it in ``VarlinkTypeRepresentable/varlinkType(using:)`` to describe the types it holds.
public final class VarlinkTypeDescriber {
    /// The named types met so far, each after the named types it uses.
    private(set) var namedTypes: [(name: String, type: VarlinkType)] = []
    private var namedOwners: [String: ObjectIdentifier] = [:]
    private var inProgress: Set<ObjectIdentifier> = []
    /// A value of every type derived by decoding, to hand out when the type is met again.
    private var placeholders: [ObjectIdentifier: Any] = [:]

    init() {}

    /// The Varlink type of `type`.
    ///
    /// Named types (``VarlinkNamedType``) come back as ``VarlinkType/named(_:)`` and are declared in
    /// the interface; other structs are written out in place.
    public func describe<T: Decodable>(_ type: T.Type) throws -> VarlinkType {
        if let named = T.self as? any VarlinkNamedType.Type, inProgress.contains(ObjectIdentifier(T.self)) {
            // A named type that refers to itself: refer to it by name.
            return .named(try Self.validatedName(of: named))
        }
        return try probe(type).type
    }

    /// The Varlink type of `type` and a value of it, for the initializer of an enclosing type.
    func probe<T: Decodable>(_ type: T.Type) throws -> (value: T, type: VarlinkType) {
        let id = ObjectIdentifier(T.self)
        guard let named = T.self as? any VarlinkNamedType.Type else {
            guard !inProgress.contains(id) else {
                throw VarlinkDeclarationError.unsupportedType(
                    T.self,
                    reason: "it contains itself; declare it as a VarlinkNamedType and refer to it through an optional or an array"
                )
            }
            inProgress.insert(id)
            defer { inProgress.remove(id) }
            return try structure(of: type)
        }

        let name = try Self.validatedName(of: named)
        if let owner = namedOwners[name], owner != id {
            throw VarlinkDeclarationError.duplicateName(name)
        }
        if namedOwners[name] != nil {
            // Declared already (or being declared: then only a representable type has a value).
            if let value = placeholders[id] as? T {
                return (value, .named(name))
            }
            guard !inProgress.contains(id) else {
                throw VarlinkDeclarationError.unsupportedType(
                    T.self,
                    reason: "it contains itself directly; refer to it through an optional or an array"
                )
            }
            return (try structure(of: type).value, .named(name))
        }
        namedOwners[name] = id
        inProgress.insert(id)
        defer { inProgress.remove(id) }
        let (value, structure) = try structure(of: type)
        switch structure {
        case .struct, .enum: break
        default:
            throw VarlinkDeclarationError.unsupportedType(T.self, reason: "a named type must be a struct or an enum, not \(structure)")
        }
        namedTypes.append((name, structure))
        return (value, .named(name))
    }

    /// The type itself, not a reference to its name.
    func resolve(_ type: VarlinkType) -> VarlinkType {
        guard case .named(let name) = type, let declared = namedTypes.first(where: { $0.name == name }) else { return type }
        return declared.type
    }

    private func structure<T: Decodable>(of type: T.Type) throws -> (value: T, type: VarlinkType) {
        if let representable = T.self as? any VarlinkTypeRepresentable.Type {
            let described = try representable.varlinkType(using: self)
            // The placeholder of a `VarlinkTypeRepresentable` type is, by the protocol, a `T`.
            return (representable.varlinkPlaceholder as! T, described)
        }
        let decoder = ProbeDecoder(describer: self)
        let value: T
        do {
            value = try T(from: decoder)
        } catch let error as VarlinkDeclarationError {
            throw error
        } catch let failure as ProbeFailure {
            throw VarlinkDeclarationError.unsupportedType(T.self, reason: failure.reason)
        } catch {
            throw VarlinkDeclarationError.unsupportedType(
                T.self,
                reason: "decoding it from placeholder values failed (\(error)); conform it to VarlinkTypeRepresentable"
            )
        }
        placeholders[ObjectIdentifier(T.self)] = value
        return (value, decoder.describedType)
    }

    private static func validatedName(of type: any VarlinkNamedType.Type) throws -> String {
        let name = type.varlinkTypeName
        guard VarlinkNames.isMemberName(name) else {
            throw VarlinkDeclarationError.invalidName(name, expected: "a member name (type)")
        }
        return name
    }
}
