/// The parameters or reply of a method, or the parameters of an error, that has no fields: `()`.
public struct VarlinkEmpty: Codable, Sendable, Hashable {
    private struct NoKeys: CodingKey {
        var stringValue: String
        var intValue: Int? { nil }
        init?(stringValue: String) { self.stringValue = stringValue }
        init?(intValue: Int) { nil }
    }

    /// The empty value.
    public init() {}

    /// Decodes from an object; its fields, if any, are not looked at.
    public init(from decoder: any Decoder) throws {
        _ = try decoder.container(keyedBy: NoKeys.self)
    }

    /// Encodes as `{}`.
    public func encode(to encoder: any Encoder) throws {
        _ = encoder.container(keyedBy: NoKeys.self)
    }
}
