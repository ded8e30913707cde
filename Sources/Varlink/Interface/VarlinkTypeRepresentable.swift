/// A type that states its own Varlink type instead of letting the derivation look into it.
///
/// ``VarlinkInterface`` derives the Varlink type of a `Decodable` struct by running its
/// `init(from:)` against a recording decoder, which hands out placeholder values. That works for
/// plain structs. Types whose decoding validates the values (an enum from a raw value, a URL) or
/// that decode from an array conform to this protocol. The standard library's scalars, `Optional`,
/// `Array` and `Dictionary` with `String` keys already do; enums with `String` raw values conform
/// through ``VarlinkEnum``.
public protocol VarlinkTypeRepresentable: Decodable {
    /// The type's Varlink type. Describe the types it contains through `describer`, so that
    /// named types among them are declared in the interface.
    static func varlinkType(using describer: VarlinkTypeDescriber) throws -> VarlinkType

    /// Any value of the type, handed to the initializer of an enclosing type during derivation.
    static var varlinkPlaceholder: Self { get }
}

extension String: VarlinkTypeRepresentable {
    public static func varlinkType(using describer: VarlinkTypeDescriber) -> VarlinkType { .string }
    public static var varlinkPlaceholder: String { "" }
}

extension Bool: VarlinkTypeRepresentable {
    public static func varlinkType(using describer: VarlinkTypeDescriber) -> VarlinkType { .bool }
    public static var varlinkPlaceholder: Bool { false }
}

extension Double: VarlinkTypeRepresentable {
    public static func varlinkType(using describer: VarlinkTypeDescriber) -> VarlinkType { .float }
    public static var varlinkPlaceholder: Double { 0 }
}

extension Float: VarlinkTypeRepresentable {
    public static func varlinkType(using describer: VarlinkTypeDescriber) -> VarlinkType { .float }
    public static var varlinkPlaceholder: Float { 0 }
}

// Every fixed-width integer is a Varlink `int` (64 bits, signed).

extension Int: VarlinkTypeRepresentable {
    public static func varlinkType(using describer: VarlinkTypeDescriber) -> VarlinkType { .int }
    public static var varlinkPlaceholder: Int { 0 }
}

extension Int8: VarlinkTypeRepresentable {
    public static func varlinkType(using describer: VarlinkTypeDescriber) -> VarlinkType { .int }
    public static var varlinkPlaceholder: Int8 { 0 }
}

extension Int16: VarlinkTypeRepresentable {
    public static func varlinkType(using describer: VarlinkTypeDescriber) -> VarlinkType { .int }
    public static var varlinkPlaceholder: Int16 { 0 }
}

extension Int32: VarlinkTypeRepresentable {
    public static func varlinkType(using describer: VarlinkTypeDescriber) -> VarlinkType { .int }
    public static var varlinkPlaceholder: Int32 { 0 }
}

extension Int64: VarlinkTypeRepresentable {
    public static func varlinkType(using describer: VarlinkTypeDescriber) -> VarlinkType { .int }
    public static var varlinkPlaceholder: Int64 { 0 }
}

extension UInt: VarlinkTypeRepresentable {
    public static func varlinkType(using describer: VarlinkTypeDescriber) -> VarlinkType { .int }
    public static var varlinkPlaceholder: UInt { 0 }
}

extension UInt8: VarlinkTypeRepresentable {
    public static func varlinkType(using describer: VarlinkTypeDescriber) -> VarlinkType { .int }
    public static var varlinkPlaceholder: UInt8 { 0 }
}

extension UInt16: VarlinkTypeRepresentable {
    public static func varlinkType(using describer: VarlinkTypeDescriber) -> VarlinkType { .int }
    public static var varlinkPlaceholder: UInt16 { 0 }
}

extension UInt32: VarlinkTypeRepresentable {
    public static func varlinkType(using describer: VarlinkTypeDescriber) -> VarlinkType { .int }
    public static var varlinkPlaceholder: UInt32 { 0 }
}

extension UInt64: VarlinkTypeRepresentable {
    public static func varlinkType(using describer: VarlinkTypeDescriber) -> VarlinkType { .int }
    public static var varlinkPlaceholder: UInt64 { 0 }
}

extension Optional: VarlinkTypeRepresentable where Wrapped: Decodable {
    public static func varlinkType(using describer: VarlinkTypeDescriber) throws -> VarlinkType {
        .optional(try describer.describe(Wrapped.self))
    }
    public static var varlinkPlaceholder: Wrapped? { nil }
}

extension Array: VarlinkTypeRepresentable where Element: Decodable {
    public static func varlinkType(using describer: VarlinkTypeDescriber) throws -> VarlinkType {
        .array(try describer.describe(Element.self))
    }
    public static var varlinkPlaceholder: [Element] { [] }
}

extension Dictionary: VarlinkTypeRepresentable where Key == String, Value: Decodable {
    public static func varlinkType(using describer: VarlinkTypeDescriber) throws -> VarlinkType {
        .dictionary(try describer.describe(Value.self))
    }
    public static var varlinkPlaceholder: [String: Value] { [:] }
}
