/// A struct or enum declared by name in the interface (`type Name (...)`) and referred to by that
/// name wherever it is used, instead of being written out in place.
///
/// ```swift
/// struct Incident: Codable, Sendable, VarlinkNamedType {
///     var id: Int
///     var category: Category
/// }
/// ```
///
/// The name defaults to the Swift type's name and must be a Varlink member name (an upper-case
/// letter, then letters and digits). Named types can refer to themselves through optionals,
/// arrays and dictionaries.
public protocol VarlinkNamedType: Decodable {
    /// The name of the type in the interface definition.
    static var varlinkTypeName: String { get }
}

extension VarlinkNamedType {
    public static var varlinkTypeName: String { String(describing: Self.self) }
}
