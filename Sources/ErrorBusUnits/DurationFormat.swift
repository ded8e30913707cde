/// How durations are written in errorbusd's configuration, in the YAML file and in environment
/// variables alike, and on errorbusctl's command line (`--timeout`).
///
/// - A bare number is seconds: `30`, `0.5`, `1_000`.
/// - A number with a unit: `500ms`, `30s`, `5m`, `1h`, `1.5h`, `2d`; units are `ns`, `us` (`µs`),
///   `ms`, `s`, `m`, `h` and `d`, and their longer spellings (`sec`, `seconds`, `min`, `minutes`,
///   `hours`, `days`, …). A space may stand between number and unit.
/// - Several such parts add up: `1h30m`, `1m 30s`.
///
/// Negative durations do not exist here. Decimal numbers are exact: `0.1` is 100 ms, not the
/// nearest binary fraction of it. `DurationText.exact` writes a duration back this way.
package enum DurationFormat {
    /// What the error messages say a duration looks like.
    package static let expectation = "a duration (seconds, or a number with a unit: 500ms, 30s, 5m, 1h)"

    /// Parses `text`, or returns `nil` if it is not a duration.
    package static func parse(_ text: String) -> Duration? {
        let scalars = Array(text.unicodeScalars)
        var index = 0
        var total: Int128 = 0
        var parts = 0

        func skipSpaces() {
            while index < scalars.count, scalars[index] == " " || scalars[index] == "\t" { index += 1 }
        }

        skipSpaces()
        while index < scalars.count {
            // The number: digits (with `_` separators between them), optionally a fraction.
            var whole = ""
            var fraction = ""
            var inFraction = false
            while index < scalars.count {
                let scalar = scalars[index]
                if ("0"..."9").contains(scalar) {
                    if inFraction { fraction.unicodeScalars.append(scalar) } else { whole.unicodeScalars.append(scalar) }
                } else if scalar == "_", index > 0, ("0"..."9").contains(scalars[index - 1]),
                    index + 1 < scalars.count, ("0"..."9").contains(scalars[index + 1])
                {
                    // A digit separator, as YAML 1.1 allows.
                } else if scalar == ".", !inFraction {
                    inFraction = true
                } else {
                    break
                }
                index += 1
            }
            guard !whole.isEmpty || !fraction.isEmpty else { return nil }
            skipSpaces()

            // The unit: letters (and µ); none means seconds, and only for a lone number.
            var unit = ""
            while index < scalars.count, scalars[index].properties.isAlphabetic {
                unit.unicodeScalars.append(scalars[index])
                index += 1
            }
            let attosecondsPerUnit: Int128
            if unit.isEmpty {
                guard parts == 0 else { return nil }
                skipSpaces()
                guard index == scalars.count else { return nil }
                attosecondsPerUnit = Self.attosecondsPerSecond
            } else if let perUnit = Self.units[unit.lowercased()] ?? Self.units[unit] {
                attosecondsPerUnit = perUnit
            } else {
                return nil
            }

            guard let value = Self.attoseconds(whole: whole, fraction: fraction, perUnit: attosecondsPerUnit) else {
                return nil
            }
            let (sum, overflow) = total.addingReportingOverflow(value)
            guard !overflow else { return nil }
            total = sum
            parts += 1
            skipSpaces()
        }
        guard parts > 0 else { return nil }
        return Duration(attoseconds: total)
    }

    // MARK: - Units

    private static let attosecondsPerSecond: Int128 = 1_000_000_000_000_000_000

    private static let units: [String: Int128] = {
        let nanosecond: Int128 = 1_000_000_000
        let second = attosecondsPerSecond
        var units: [String: Int128] = [:]
        for name in ["ns", "nsec", "nanosecond", "nanoseconds"] { units[name] = nanosecond }
        for name in ["us", "µs", "μs", "usec", "microsecond", "microseconds"] { units[name] = nanosecond * 1_000 }
        for name in ["ms", "msec", "millisecond", "milliseconds"] { units[name] = nanosecond * 1_000_000 }
        for name in ["s", "sec", "secs", "second", "seconds"] { units[name] = second }
        for name in ["m", "min", "mins", "minute", "minutes"] { units[name] = second * 60 }
        for name in ["h", "hr", "hrs", "hour", "hours"] { units[name] = second * 3_600 }
        for name in ["d", "day", "days"] { units[name] = second * 86_400 }
        return units
    }()

    /// `whole.fraction × perUnit` in attoseconds, exactly, or `nil` on overflow.
    private static func attoseconds(whole: String, fraction: String, perUnit: Int128) -> Int128? {
        var value: Int128 = 0
        for digit in whole.utf8 {
            let (shifted, overflowShift) = value.multipliedReportingOverflow(by: 10)
            let (next, overflowAdd) = shifted.addingReportingOverflow(Int128(digit - UInt8(ascii: "0")))
            guard !overflowShift, !overflowAdd else { return nil }
            value = next
        }
        let (scaled, overflow) = value.multipliedReportingOverflow(by: perUnit)
        guard !overflow else { return nil }
        // The fraction: each further digit is a tenth of the last; digits below an attosecond
        // are dropped.
        var fractional: Int128 = 0
        var place = perUnit
        for digit in fraction.utf8 {
            place /= 10
            if place == 0 { break }
            fractional += Int128(digit - UInt8(ascii: "0")) * place
        }
        let (sum, overflowSum) = scaled.addingReportingOverflow(fractional)
        return overflowSum ? nil : sum
    }
}
