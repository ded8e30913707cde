/// A type in Varlink's interface definition language (https://varlink.org/Interface-Definition).
///
/// You rarely build one by hand: ``VarlinkInterface`` derives the types of methods, errors and
/// named types from their `Codable` Swift types. Types that the derivation cannot look into
/// describe themselves through ``VarlinkTypeRepresentable``.
public indirect enum VarlinkType: Sendable, Hashable {
    /// `bool`
    case bool
    /// `int`: a 64-bit signed integer.
    case int
    /// `float`: a double-precision number.
    case float
    /// `string`
    case string
    /// `object`: any JSON object, not described further.
    case object
    /// `[]T`: an array of elements of one type.
    case array(VarlinkType)
    /// `[string]T`: a map from strings to values of one type.
    case dictionary(VarlinkType)
    /// `?T`: a value that may be absent or `null`.
    case optional(VarlinkType)
    /// `(a, b, c)`: one of a set of names, sent as a string.
    case `enum`([String])
    /// `(a: T, b: U)`: an object with these fields.
    case `struct`([VarlinkField])
    /// A reference to a type declared by name in the same interface (`type Name ...`).
    case named(String)
}

extension VarlinkType: CustomStringConvertible {
    /// The type as written in the interface definition language, on one line.
    public var description: String {
        var text = ""
        render(into: &text)
        return text
    }

    /// Writes the type in IDL syntax. Structs and enums are written on one line.
    func render(into text: inout String) {
        switch self {
        case .bool: text += "bool"
        case .int: text += "int"
        case .float: text += "float"
        case .string: text += "string"
        case .object: text += "object"
        case .array(let element):
            text += "[]"
            element.render(into: &text)
        case .dictionary(let value):
            text += "[string]"
            value.render(into: &text)
        case .optional(let wrapped):
            text += "?"
            // `??T` is not valid IDL: a maybe of a maybe is just a maybe.
            wrapped.withoutOptional.render(into: &text)
        case .enum(let cases):
            text += "("
            text += cases.joined(separator: ", ")
            text += ")"
        case .struct(let fields):
            text += "("
            for (index, field) in fields.enumerated() {
                if index > 0 { text += ", " }
                text += field.name
                text += ": "
                field.type.render(into: &text)
            }
            text += ")"
        case .named(let name):
            text += name
        }
    }

    /// Writes a struct one field a line when it would not fit on one line of `width` columns.
    /// Top-level structs (method parameters, replies, errors, named types) are written this way.
    func renderTopLevel(into text: inout String, startingAt column: Int, width: Int = 100) {
        let oneLine = description
        guard case .struct(let fields) = self, !fields.isEmpty, column + oneLine.count > width else {
            text += oneLine
            return
        }
        text += "(\n"
        for (index, field) in fields.enumerated() {
            text += "  "
            text += field.name
            text += ": "
            field.type.render(into: &text)
            text += index == fields.count - 1 ? "\n" : ",\n"
        }
        text += ")"
    }

    private var withoutOptional: VarlinkType {
        if case .optional(let wrapped) = self { return wrapped.withoutOptional }
        return self
    }
}
