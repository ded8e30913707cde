import FoundationEssentials

/// An error reply: the fully qualified name of the error and its parameters.
///
/// Method handlers throw it to answer a call with an error (make one from a
/// ``VarlinkErrorDeclaration``); the client throws it when a call is answered with one.
public struct VarlinkError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The error's fully qualified name, e.g. `org.varlink.service.InvalidParameter`.
    public let name: String
    /// The error's parameters: a JSON object.
    let parameters: JSONValue

    /// An error without parameters. Prefer ``VarlinkErrorDeclaration/error(_:)`` for errors your
    /// interfaces declare.
    public init(name: String) {
        self.name = name
        self.parameters = .emptyObject
    }

    init(name: String, parameters: JSONValue) {
        self.name = name
        self.parameters = parameters
    }

    /// An error whose parameters are `parameters` encoded as JSON. Parameters that cannot be
    /// encoded (a NaN) are sent as an empty object.
    init<Parameters: Encodable>(name: String, encoding parameters: Parameters) {
        self.name = name
        do {
            let data = try JSONEncoder().encode(parameters)
            self.parameters = try JSONDecoder().decode(JSONValue.self, from: data)
        } catch {
            self.parameters = .emptyObject
        }
    }

    /// The parameters decoded as `type`.
    public func decodeParameters<Parameters: Decodable>(as type: Parameters.Type) throws -> Parameters {
        let data = try JSONEncoder().encode(parameters)
        return try JSONDecoder().decode(type, from: data)
    }

    /// The parameters as JSON text.
    public var parametersJSON: String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        guard let data = try? encoder.encode(parameters) else { return "{}" }
        return String(decoding: data, as: UTF8.self)
    }

    public var description: String {
        parameters == .emptyObject ? name : "\(name) \(parametersJSON)"
    }
}
