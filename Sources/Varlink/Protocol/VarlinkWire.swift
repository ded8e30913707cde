import FoundationEssentials
import NIOCore
import NIOFoundationEssentialsCompat

/// The JSON shapes of calls and replies (https://varlink.org/Method-Call), and how they are
/// written to and read from NUL-terminated frames.
enum VarlinkWire {
    /// The keys of calls and replies.
    enum Key: String, CodingKey {
        case method, parameters, oneway, more, upgrade, continues, error
    }

    /// A call, as the client sends it.
    struct Call<Parameters: Encodable>: Encodable {
        let method: String
        let parameters: Parameters
        let oneway: Bool?
        let more: Bool?
    }

    /// A call without its parameters: what the server reads first, to find the method.
    struct CallHeader: Decodable {
        let method: String
        let oneway: Bool?
        let more: Bool?
        let upgrade: Bool?
    }

    /// A call's parameters, decoded once the method is known.
    ///
    /// Fields that the method does not declare are rejected (as the reference implementation
    /// does), so that a misspelled optional parameter is an error rather than silently ignored.
    struct CallParameters<Parameters: Decodable>: Decodable {
        /// `nil` when the call has no parameters (or `null`).
        let parameters: Parameters?

        init(from decoder: any Decoder) throws {
            let container = try decoder.container(keyedBy: Key.self)
            guard container.contains(.parameters), try !container.decodeNil(forKey: .parameters) else {
                parameters = nil
                return
            }
            if let known = decoder.userInfo[.varlinkParameterNames] as? Set<String> {
                let fields = try container.nestedContainer(keyedBy: AnyKey.self, forKey: .parameters)
                if let unknown = fields.allKeys.first(where: { !known.contains($0.stringValue) }) {
                    throw UnknownParameter(name: unknown.stringValue)
                }
            }
            parameters = try container.decode(Parameters.self, forKey: .parameters)
        }
    }

    /// A parameter the method does not declare.
    struct UnknownParameter: Error {
        let name: String
    }

    /// A reply with parameters.
    struct Reply<Parameters: Encodable>: Encodable {
        let parameters: Parameters
        /// `true` when more replies follow; left out of the last one.
        let continues: Bool?
    }

    /// An error reply.
    struct ErrorReply: Codable {
        let error: String
        let parameters: JSONValue?
    }

    /// A reply without its parameters: what the client reads first.
    struct ReplyHeader: Decodable {
        let error: String?
        let continues: Bool?
    }

    /// A reply's parameters.
    struct ReplyParameters<Parameters: Decodable>: Decodable {
        let parameters: Parameters?
    }

    /// Any key of a JSON object.
    struct AnyKey: CodingKey {
        let stringValue: String
        var intValue: Int? { nil }
        init(stringValue: String) { self.stringValue = stringValue }
        init?(intValue: Int) { nil }
    }

    /// Encodes `value` as JSON and terminates it with a NUL, ready to write.
    static func frame<Value: Encodable>(_ value: Value, encoder: JSONEncoder, allocator: ByteBufferAllocator) throws -> ByteBuffer {
        let data = try encoder.encode(value)
        var buffer = allocator.buffer(capacity: data.count + 1)
        buffer.writeBytes(data)
        buffer.writeInteger(UInt8(0))
        return buffer
    }

    /// The encoder for everything sent: compact, and URLs without escaped slashes.
    static func makeEncoder() -> JSONEncoder {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.withoutEscapingSlashes]
        return encoder
    }

    /// The decoder for a method's parameters, which knows the names the method declares.
    static func makeDecoder(parameterNames: Set<String>? = nil) -> JSONDecoder {
        let decoder = JSONDecoder()
        if let parameterNames {
            decoder.userInfo[.varlinkParameterNames] = parameterNames
        }
        return decoder
    }

    /// Decodes a value of a type without fields from `{}`, for calls and replies that leave
    /// their parameters out.
    static func decodeEmpty<Value: Decodable>(_ type: Value.Type, decoder: JSONDecoder) throws -> Value {
        try decoder.decode(type, from: emptyObject)
    }

    private static let emptyObject = ByteBuffer(string: "{}")
}

extension CodingUserInfoKey {
    /// The parameter names a method declares: a `Set<String>`.
    static let varlinkParameterNames = CodingUserInfoKey(rawValue: "varlink.parameterNames")!
}
