/// How errorbus writes a duration: the one renderer of errorbusd's messages, the bus's incident
/// lines, errorbusctl's columns and the configuration reference, in the registers they need.
package enum DurationText {
    /// In an operator's words, rounded, for sentences: `800 ms`, `5 s`, `2 min 30 s`,
    /// `3 h 20 min`.
    package static func format(_ duration: Duration) -> String {
        let (seconds, attoseconds) = duration.components
        if seconds < 1 {
            return "\(max(0, attoseconds / 1_000_000_000_000_000)) ms"
        }
        let roundedSeconds = seconds + (attoseconds >= 500_000_000_000_000_000 ? 1 : 0)
        switch roundedSeconds {
        case ..<120:
            return "\(roundedSeconds) s"
        case ..<7200:
            let remainder = roundedSeconds % 60
            return remainder == 0 ? "\(roundedSeconds / 60) min" : "\(roundedSeconds / 60) min \(remainder) s"
        default:
            let minutes = roundedSeconds / 60 % 60
            return minutes == 0 ? "\(roundedSeconds / 3600) h" : "\(roundedSeconds / 3600) h \(minutes) min"
        }
    }

    /// Exactly, as errorbusd's configuration reads it: the largest unit that divides it
    /// (`300s` is `5m`, `0.01s` is `10ms`, `1.5s` is `1500ms`).
    package static func exact(_ duration: Duration) -> String {
        let total = duration.attoseconds
        if total == 0 { return "0s" }
        for (unit, perUnit) in units where total % perUnit == 0 {
            return "\(total / perUnit)\(unit)"
        }
        return "\(total)as"
    }

    /// Whole seconds, compact and rounded to two units, for columns: `8s`, `3m12s` under ten
    /// minutes, `2h5m`, `4d3h`; in the configuration's units.
    package static func compact(seconds: Int) -> String {
        switch seconds {
        case ..<60: return "\(seconds)s"
        case ..<600: return seconds % 60 == 0 ? "\(seconds / 60)m" : "\(seconds / 60)m\(seconds % 60)s"
        case ..<3600: return "\(seconds / 60)m"
        case ..<86_400: return (seconds % 3600) / 60 == 0 ? "\(seconds / 3600)h" : "\(seconds / 3600)h\((seconds % 3600) / 60)m"
        default: return (seconds % 86_400) / 3600 == 0 ? "\(seconds / 86_400)d" : "\(seconds / 86_400)d\((seconds % 86_400) / 3600)h"
        }
    }

    private static let second: Int128 = 1_000_000_000_000_000_000

    /// The configuration's units, largest first, in attoseconds.
    private static let units: [(String, Int128)] = [
        ("d", second * 86_400),
        ("h", second * 3_600),
        ("m", second * 60),
        ("s", second),
        ("ms", second / 1_000),
        ("us", second / 1_000_000),
        ("ns", second / 1_000_000_000),
    ]
}
