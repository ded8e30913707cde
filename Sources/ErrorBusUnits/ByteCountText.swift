/// How errorbus writes a number of bytes: the one renderer of errorbusd's messages, the HTTP
/// failures' texts and the configuration reference.
package enum ByteCountText {
    private static let units: [(name: String, size: Int64)] = [("KiB", 1 << 10), ("MiB", 1 << 20), ("GiB", 1 << 30), ("TiB", 1 << 40)]

    /// In an operator's words, rounded to a tenth: `512 bytes`, `64 KiB`, `4.7 GiB`.
    package static func format(_ bytes: Int) -> String {
        guard bytes >= 1024 else { return bytes == 1 ? "1 byte" : "\(bytes) bytes" }
        var value = Double(bytes) / 1024
        var unit = 0
        while value >= 1024, unit < units.count - 1 {
            value /= 1024
            unit += 1
        }
        let rounded = (value * 10).rounded() / 10
        let text = rounded == rounded.rounded() ? String(Int(rounded)) : String(rounded)
        return "\(text) \(units[unit].name)"
    }

    /// Exactly, as errorbusd's configuration reads it: with the largest binary unit that divides
    /// it (`100MiB`), else in bytes (`1000`).
    package static func exact(_ bytes: Int64) -> String {
        for (name, size) in units.reversed() where bytes != 0 && bytes % size == 0 {
            return "\(bytes / size)\(name)"
        }
        return "\(bytes)"
    }
}
