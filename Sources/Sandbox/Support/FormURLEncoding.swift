/// `application/x-www-form-urlencoded` decoding (WHATWG URL §5.1), as RFC 6749 uses it for the
/// token request body and for the client id and secret inside HTTP Basic credentials.
enum FormURLEncoding {
    /// Why a form could not be decoded.
    enum Failure: Error, Equatable {
        /// A parameter appears more than once (RFC 6749 §3.2 forbids it).
        case repeated(String)
        /// A `%` not followed by two hex digits, or bytes that are not UTF-8.
        case malformed
    }

    /// Decodes `name=value&…` into a dictionary; empty names are skipped.
    static func decode(_ body: some Collection<UInt8>) throws(Failure) -> [String: String] {
        var fields: [String: String] = [:]
        for pair in body.split(separator: UInt8(ascii: "&"), omittingEmptySubsequences: true) {
            let parts = pair.split(separator: UInt8(ascii: "="), maxSplits: 1, omittingEmptySubsequences: false)
            let name = try unescape(parts[0])
            let value = parts.count > 1 ? try unescape(parts[1]) : ""
            guard !name.isEmpty else { continue }
            guard fields.updateValue(value, forKey: name) == nil else { throw .repeated(name) }
        }
        return fields
    }

    /// Replaces `+` with space and `%XX` with the byte it names, then reads the bytes as UTF-8.
    static func unescape(_ text: some Collection<UInt8>) throws(Failure) -> String {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(text.count)
        var index = text.startIndex
        while index != text.endIndex {
            let byte = text[index]
            text.formIndex(after: &index)
            switch byte {
            case UInt8(ascii: "+"):
                bytes.append(UInt8(ascii: " "))
            case UInt8(ascii: "%"):
                guard index != text.endIndex, let high = hexValue(text[index]) else { throw .malformed }
                text.formIndex(after: &index)
                guard index != text.endIndex, let low = hexValue(text[index]) else { throw .malformed }
                text.formIndex(after: &index)
                bytes.append(high << 4 | low)
            default:
                bytes.append(byte)
            }
        }
        guard let string = String(validating: bytes, as: UTF8.self) else { throw .malformed }
        return string
    }

    private static func hexValue(_ byte: UInt8) -> UInt8? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): byte - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): byte - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): byte - UInt8(ascii: "A") + 10
        default: nil
        }
    }
}
