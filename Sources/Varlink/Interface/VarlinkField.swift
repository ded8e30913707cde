/// One field of a Varlink struct: a name and a type.
public struct VarlinkField: Sendable, Hashable {
    /// The field's name, as it appears in JSON.
    public var name: String
    /// The field's type.
    public var type: VarlinkType

    /// Creates a field.
    public init(_ name: String, _ type: VarlinkType) {
        self.name = name
        self.type = type
    }
}
