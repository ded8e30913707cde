/// How sizes in bytes are written in errorbusd's configuration.
///
/// A whole number of bytes (`104857600`, `100_000`), or a whole number with a unit, case-insensitive,
/// with an optional space: `B`; `KiB`, `MiB`, `GiB`, `TiB` (powers of 1024); `K`, `M`, `G`, `T`
/// (also powers of 1024, as systemd reads them); `kB`, `MB`, `GB`, `TB` (powers of 1000, as SI
/// defines them). `ByteCountText.exact` writes a size back this way.
enum ByteSizeFormat {
    /// What the error messages say a size looks like.
    static let expectation = "a size in bytes (a whole number, or with a unit: 512KiB, 10MiB, 1GiB)"

    /// Parses `text`, or returns `nil` if it is not a size or does not fit in an `Int64`.
    static func parse(_ text: String) -> Int64? {
        let trimmed = text.configurationTrimmed
        let digitsEnd = trimmed.firstIndex { !$0.isASCIIDigitOrSeparator } ?? trimmed.endIndex
        let digits = trimmed[..<digitsEnd]
        guard let number = IntegerFormat.parse(digits).flatMap(Int64.init(exactly:)), number >= 0 else {
            return nil
        }
        let unit = trimmed[digitsEnd...].configurationTrimmed.lowercased()
        guard let multiplier = Self.units[unit] else { return nil }
        let (bytes, overflow) = number.multipliedReportingOverflow(by: multiplier)
        return overflow ? nil : bytes
    }

    private static let units: [String: Int64] = [
        "": 1, "b": 1,
        "k": 1 << 10, "kib": 1 << 10, "kb": 1_000,
        "m": 1 << 20, "mib": 1 << 20, "mb": 1_000_000,
        "g": 1 << 30, "gib": 1 << 30, "gb": 1_000_000_000,
        "t": 1 << 40, "tib": 1 << 40, "tb": 1_000_000_000_000,
    ]
}

extension Character {
    fileprivate var isASCIIDigitOrSeparator: Bool {
        ("0"..."9").contains(self) || self == "_"
    }
}
