/// Durations in an operator's words: `800 ms`, `5 s`, `2 min 30 s`, `3 h 20 min`.
package enum DurationText {
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
}
