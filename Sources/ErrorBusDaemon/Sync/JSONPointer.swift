import Foundation

/// Looks up a string in a JSON document by a JSON pointer (RFC 6901): `/sha256`,
/// `/item/digests/0`, with `~1` for `/` and `~0` for `~` in a name.
///
/// It walks `JSONDecoder`'s containers along the pointer, so only the values on the way are
/// decoded: a receipt is read at every upload, and materialising the whole document as `Any`
/// (`JSONSerialization`) cost a dictionary, its hashing and a cast per value each time.
enum JSONPointer {
    /// The string at `pointer` in `json`; `nil` when the document has nothing there or
    /// something other than a string.
    ///
    /// - Throws: when `json` is not JSON.
    static func string(at pointer: String, in json: Data) throws -> String? {
        let decoder = JSONDecoder()
        decoder.userInfo[tokensKey] = tokens(of: pointer)
        return try decoder.decode(Lookup.self, from: json).value
    }

    /// The pointer's reference tokens, unescaped.
    static func tokens(of pointer: String) -> [String] {
        pointer.split(separator: "/", omittingEmptySubsequences: false).dropFirst().map {
            String($0).replacing("~1", with: "/").replacing("~0", with: "~")
        }
    }

    private static let tokensKey = CodingUserInfoKey(rawValue: "errorbus.jsonPointer")!

    /// The document, decoded only along the pointer.
    private struct Lookup: Decodable {
        let value: String?

        init(from decoder: any Decoder) throws {
            let tokens = decoder.userInfo[JSONPointer.tokensKey] as? [String] ?? []
            // Anything not JSON has thrown before this is called; a document of another shape
            // has nothing at the pointer.
            value = try? Self.follow(tokens[...], from: decoder)
        }

        private static func follow(_ tokens: ArraySlice<String>, from decoder: any Decoder) throws -> String? {
            guard let token = tokens.first else {
                return try decoder.singleValueContainer().decode(String.self)
            }
            if var array = try? decoder.unkeyedContainer() {
                guard let index = Int(token), index >= 0 else { return nil }
                for _ in 0..<index {
                    guard !array.isAtEnd else { return nil }
                    _ = try array.decode(Skipped.self)
                }
                guard !array.isAtEnd else { return nil }
                return try follow(tokens.dropFirst(), from: array.superDecoder())
            }
            let object = try decoder.container(keyedBy: Key.self)
            let key = Key(stringValue: token)
            guard object.contains(key) else { return nil }
            return try follow(tokens.dropFirst(), from: object.superDecoder(forKey: key))
        }
    }

    /// Any value, not looked at.
    private struct Skipped: Decodable {
        init(from decoder: any Decoder) throws {}
    }

    private struct Key: CodingKey {
        let stringValue: String
        var intValue: Int? { nil }
        init(stringValue: String) { self.stringValue = stringValue }
        init?(intValue: Int) { nil }
    }
}
