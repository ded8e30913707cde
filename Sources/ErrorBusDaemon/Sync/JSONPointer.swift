import Foundation

/// Looks up a value in a JSON document by a JSON pointer (RFC 6901): `/sha256`,
/// `/item/digests/0`, with `~1` for `/` and `~0` for `~` in a name.
enum JSONPointer {
    /// The value at `pointer` in `json` (a `String`, `NSNumber`, array, dictionary or `NSNull`),
    /// or `nil` when the document does not parse or has nothing there.
    static func value(at pointer: String, in json: Data) throws -> Any? {
        var current: Any? = try JSONSerialization.jsonObject(with: json, options: [.fragmentsAllowed])
        guard pointer != "" else { return current }
        for token in pointer.split(separator: "/", omittingEmptySubsequences: false).dropFirst() {
            let name = String(token).replacing("~1", with: "/").replacing("~0", with: "~")
            switch current {
            case let object as [String: Any]:
                current = object[name]
            case let array as [Any]:
                guard let index = Int(name), array.indices.contains(index) else { return nil }
                current = array[index]
            default:
                return nil
            }
        }
        return current
    }
}
