/// A decoder that answers every request with a placeholder and records what was asked: the
/// field names and types of a `Decodable` struct, in the order its `init(from:)` reads them.
///
/// It assumes `init(from:)` reads every field unconditionally, as synthesized conformances do.
/// Arrays, nested containers and super decoders are not looked into: types that need them
/// conform to ``VarlinkTypeRepresentable``.
final class ProbeDecoder: Decoder {
    private enum Shape {
        case nothing
        case keyed([VarlinkField])
        case single(VarlinkType)
    }

    let describer: VarlinkTypeDescriber
    let codingPath: [any CodingKey] = []
    let userInfo: [CodingUserInfoKey: Any] = [:]
    private var shape = Shape.nothing

    init(describer: VarlinkTypeDescriber) {
        self.describer = describer
    }

    /// The type recorded: a struct of the fields read, or the type of the single value read.
    var describedType: VarlinkType {
        switch shape {
        case .nothing: .struct([])
        case .keyed(let fields): .struct(fields)
        case .single(let type): type
        }
    }

    func record(field name: String, type: VarlinkType) throws {
        guard VarlinkNames.isIdentifier(name) else {
            throw VarlinkDeclarationError.invalidName(name, expected: "an identifier (field)")
        }
        switch shape {
        case .nothing:
            shape = .keyed([VarlinkField(name, type)])
        case .keyed(var fields):
            guard !fields.contains(where: { $0.name == name }) else { return }
            fields.append(VarlinkField(name, type))
            shape = .keyed(fields)
        case .single:
            throw ProbeFailure(reason: "it decodes both a single value and fields")
        }
    }

    func record(single type: VarlinkType) {
        shape = .single(type)
    }

    func container<Key: CodingKey>(keyedBy type: Key.Type) throws -> KeyedDecodingContainer<Key> {
        if case .nothing = shape { shape = .keyed([]) }
        return KeyedDecodingContainer(KeyedProbe<Key>(decoder: self))
    }

    func unkeyedContainer() throws -> any UnkeyedDecodingContainer {
        throw ProbeFailure(reason: "it decodes from an array; conform it to VarlinkTypeRepresentable")
    }

    func singleValueContainer() throws -> any SingleValueDecodingContainer {
        SingleValueProbe(decoder: self)
    }
}

private struct KeyedProbe<Key: CodingKey>: KeyedDecodingContainerProtocol {
    let decoder: ProbeDecoder
    var codingPath: [any CodingKey] { [] }
    var allKeys: [Key] { [] }

    func contains(_ key: Key) -> Bool { true }
    func decodeNil(forKey key: Key) throws -> Bool { false }

    private func record<T: Decodable>(_ type: T.Type, _ key: Key) throws -> T {
        let (value, described) = try decoder.describer.probe(T.self)
        try decoder.record(field: key.stringValue, type: described)
        return value
    }

    private func recordOptional<T: Decodable>(_ type: T.Type, _ key: Key) throws -> T? {
        try decoder.record(field: key.stringValue, type: .optional(try decoder.describer.describe(T.self)))
        return nil
    }

    func decode(_ type: Bool.Type, forKey key: Key) throws -> Bool { try record(type, key) }
    func decode(_ type: String.Type, forKey key: Key) throws -> String { try record(type, key) }
    func decode(_ type: Double.Type, forKey key: Key) throws -> Double { try record(type, key) }
    func decode(_ type: Float.Type, forKey key: Key) throws -> Float { try record(type, key) }
    func decode(_ type: Int.Type, forKey key: Key) throws -> Int { try record(type, key) }
    func decode(_ type: Int8.Type, forKey key: Key) throws -> Int8 { try record(type, key) }
    func decode(_ type: Int16.Type, forKey key: Key) throws -> Int16 { try record(type, key) }
    func decode(_ type: Int32.Type, forKey key: Key) throws -> Int32 { try record(type, key) }
    func decode(_ type: Int64.Type, forKey key: Key) throws -> Int64 { try record(type, key) }
    func decode(_ type: UInt.Type, forKey key: Key) throws -> UInt { try record(type, key) }
    func decode(_ type: UInt8.Type, forKey key: Key) throws -> UInt8 { try record(type, key) }
    func decode(_ type: UInt16.Type, forKey key: Key) throws -> UInt16 { try record(type, key) }
    func decode(_ type: UInt32.Type, forKey key: Key) throws -> UInt32 { try record(type, key) }
    func decode(_ type: UInt64.Type, forKey key: Key) throws -> UInt64 { try record(type, key) }
    func decode<T: Decodable>(_ type: T.Type, forKey key: Key) throws -> T { try record(type, key) }

    func decodeIfPresent(_ type: Bool.Type, forKey key: Key) throws -> Bool? { try recordOptional(type, key) }
    func decodeIfPresent(_ type: String.Type, forKey key: Key) throws -> String? { try recordOptional(type, key) }
    func decodeIfPresent(_ type: Double.Type, forKey key: Key) throws -> Double? { try recordOptional(type, key) }
    func decodeIfPresent(_ type: Float.Type, forKey key: Key) throws -> Float? { try recordOptional(type, key) }
    func decodeIfPresent(_ type: Int.Type, forKey key: Key) throws -> Int? { try recordOptional(type, key) }
    func decodeIfPresent(_ type: Int8.Type, forKey key: Key) throws -> Int8? { try recordOptional(type, key) }
    func decodeIfPresent(_ type: Int16.Type, forKey key: Key) throws -> Int16? { try recordOptional(type, key) }
    func decodeIfPresent(_ type: Int32.Type, forKey key: Key) throws -> Int32? { try recordOptional(type, key) }
    func decodeIfPresent(_ type: Int64.Type, forKey key: Key) throws -> Int64? { try recordOptional(type, key) }
    func decodeIfPresent(_ type: UInt.Type, forKey key: Key) throws -> UInt? { try recordOptional(type, key) }
    func decodeIfPresent(_ type: UInt8.Type, forKey key: Key) throws -> UInt8? { try recordOptional(type, key) }
    func decodeIfPresent(_ type: UInt16.Type, forKey key: Key) throws -> UInt16? { try recordOptional(type, key) }
    func decodeIfPresent(_ type: UInt32.Type, forKey key: Key) throws -> UInt32? { try recordOptional(type, key) }
    func decodeIfPresent(_ type: UInt64.Type, forKey key: Key) throws -> UInt64? { try recordOptional(type, key) }
    func decodeIfPresent<T: Decodable>(_ type: T.Type, forKey key: Key) throws -> T? { try recordOptional(type, key) }

    func nestedContainer<NestedKey: CodingKey>(
        keyedBy type: NestedKey.Type,
        forKey key: Key
    ) throws -> KeyedDecodingContainer<NestedKey> {
        throw ProbeFailure(reason: "it uses a nested container; use a nested struct instead")
    }

    func nestedUnkeyedContainer(forKey key: Key) throws -> any UnkeyedDecodingContainer {
        throw ProbeFailure(reason: "it uses a nested container; use an array property instead")
    }

    func superDecoder() throws -> any Decoder {
        throw ProbeFailure(reason: "it uses a super decoder")
    }

    func superDecoder(forKey key: Key) throws -> any Decoder {
        throw ProbeFailure(reason: "it uses a super decoder")
    }
}

private struct SingleValueProbe: SingleValueDecodingContainer {
    let decoder: ProbeDecoder
    var codingPath: [any CodingKey] { [] }

    func decodeNil() -> Bool { false }

    private func record<T: Decodable>(_ type: T.Type) throws -> T {
        let (value, described) = try decoder.describer.probe(T.self)
        decoder.record(single: described)
        return value
    }

    func decode(_ type: Bool.Type) throws -> Bool { try record(type) }
    func decode(_ type: String.Type) throws -> String { try record(type) }
    func decode(_ type: Double.Type) throws -> Double { try record(type) }
    func decode(_ type: Float.Type) throws -> Float { try record(type) }
    func decode(_ type: Int.Type) throws -> Int { try record(type) }
    func decode(_ type: Int8.Type) throws -> Int8 { try record(type) }
    func decode(_ type: Int16.Type) throws -> Int16 { try record(type) }
    func decode(_ type: Int32.Type) throws -> Int32 { try record(type) }
    func decode(_ type: Int64.Type) throws -> Int64 { try record(type) }
    func decode(_ type: UInt.Type) throws -> UInt { try record(type) }
    func decode(_ type: UInt8.Type) throws -> UInt8 { try record(type) }
    func decode(_ type: UInt16.Type) throws -> UInt16 { try record(type) }
    func decode(_ type: UInt32.Type) throws -> UInt32 { try record(type) }
    func decode(_ type: UInt64.Type) throws -> UInt64 { try record(type) }
    func decode<T: Decodable>(_ type: T.Type) throws -> T { try record(type) }
}

/// Why a type could not be looked into; ``VarlinkTypeDescriber`` names the type in its error.
struct ProbeFailure: Error {
    let reason: String
}
