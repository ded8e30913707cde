/// The `<title>` of an HTML page, to name the page an operator's host was shown (a captive
/// portal's "Sign in to Guest Wi-Fi").
enum HTMLTitle {
    /// The text of the first `<title>` element in `bytes`, whitespace collapsed, at most 80
    /// characters; `nil` when there is none or it is empty.
    static func find(in bytes: [UInt8]) -> String? {
        let lowered = bytes.map { $0 >= UInt8(ascii: "A") && $0 <= UInt8(ascii: "Z") ? $0 + 32 : $0 }
        guard let open = lowered.firstRange(of: Array("<title".utf8)),
            let openEnd = lowered[open.upperBound...].firstIndex(of: UInt8(ascii: ">")),
            let close = lowered[(openEnd + 1)...].firstRange(of: Array("</title".utf8))
        else { return nil }
        let text = String(decoding: bytes[(openEnd + 1)..<close.lowerBound], as: UTF8.self)
        let collapsed = text.split(whereSeparator: \.isWhitespace).joined(separator: " ")
        guard !collapsed.isEmpty else { return nil }
        return collapsed.count > 80 ? String(collapsed.prefix(79)) + "…" : collapsed
    }
}
