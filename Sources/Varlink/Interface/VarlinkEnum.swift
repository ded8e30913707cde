/// An enum sent as one of a fixed set of strings: Varlink's `(a, b, c)`.
///
/// ```swift
/// enum Category: String, Codable, Sendable, VarlinkEnum {
///     case unreachable, rateLimited, transient
/// }
/// ```
///
/// The raw values must be Varlink identifiers (a letter, then letters, digits and single
/// underscores) and there must be at least one case.
public protocol VarlinkEnum: VarlinkTypeRepresentable, CaseIterable, RawRepresentable where RawValue == String {}

extension VarlinkEnum {
    public static func varlinkType(using describer: VarlinkTypeDescriber) throws -> VarlinkType {
        let names = allCases.map(\.rawValue)
        guard !names.isEmpty else {
            throw VarlinkDeclarationError.unsupportedType(Self.self, reason: "an enum needs at least one case")
        }
        for name in names where !VarlinkNames.isIdentifier(name) {
            throw VarlinkDeclarationError.invalidName(name, expected: "an identifier (enum case)")
        }
        return .enum(names)
    }

    public static var varlinkPlaceholder: Self {
        // `varlinkType(using:)` has rejected enums without cases before this is ever used.
        allCases.first!
    }
}
