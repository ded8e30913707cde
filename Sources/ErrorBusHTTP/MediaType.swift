/// Media type helpers for `Content-Type` values.
enum MediaType {
    /// The `type/subtype` of a media type, lowercased, without parameters: `application/json` for
    /// `Application/JSON; charset=utf-8`.
    static func essence(of value: String) -> String {
        let end = value.firstIndex(of: ";") ?? value.endIndex
        return value[..<end].trimmingASCIIWhitespace().lowercased()
    }

    /// Whether the media type is JSON: `application/json` or any `+json` suffix (RFC 6839).
    static func isJSON(_ value: String) -> Bool {
        let essence = essence(of: value)
        return essence == "application/json" || essence.hasSuffix("+json")
    }

    /// Whether the media type is an HTML page.
    static func isHTML(_ value: String) -> Bool {
        let essence = essence(of: value)
        return essence == "text/html" || essence == "application/xhtml+xml"
    }
}

extension StringProtocol {
    /// The string without leading and trailing spaces and horizontal tabs (HTTP's OWS).
    func trimmingASCIIWhitespace() -> String {
        var slice = Substring(self)
        while let first = slice.first, first == " " || first == "\t" { slice = slice.dropFirst() }
        while let last = slice.last, last == " " || last == "\t" { slice = slice.dropLast() }
        return String(slice)
    }
}
