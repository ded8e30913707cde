extension Duration {
    /// Whole nanoseconds (truncated).
    var nanoseconds: Int64 {
        let (seconds, attoseconds) = components
        return seconds * 1_000_000_000 + attoseconds / 1_000_000_000
    }

    /// Milliseconds, with the fraction.
    var milliseconds: Double {
        let (seconds, attoseconds) = components
        return Double(seconds) * 1_000 + Double(attoseconds) / 1e15
    }

    /// Seconds, with the fraction.
    var seconds: Double {
        milliseconds / 1_000
    }
}
