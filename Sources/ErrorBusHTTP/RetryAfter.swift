#if canImport(FoundationEssentials)
public import FoundationEssentials
#else
public import Foundation
#endif

/// The `Retry-After` response header (RFC 9110 §10.2.3): how long the server asks the client to
/// wait before its next request.
public enum RetryAfter: Sendable {
    /// The longest wait a delta-seconds value stands for: larger values, and values too large for
    /// an integer, mean this (2³¹ seconds, the cap RFC 9111 §1.2.2 sets for delta-seconds).
    public static let maximumSeconds: Int64 = 1 << 31

    /// The wait `value` asks for, as seen at `now`.
    ///
    /// - `delta-seconds` (`120`): that many seconds; one or more ASCII digits and nothing else.
    /// - `HTTP-date` (`Wed, 21 Oct 2015 07:28:00 GMT`): the time until then, `.zero` when it has
    ///   passed. IMF-fixdate and, as RFC 9110 §5.6.7 requires recipients to accept them, the
    ///   obsolete RFC 850 and asctime forms.
    /// - anything else (empty, negative, fractional, a malformed date): `nil`, as if the header
    ///   were absent.
    ///
    /// Leading and trailing spaces are ignored.
    public static func parse(_ value: String, now: Date) -> Duration? {
        let text = value.trimmingASCIIWhitespace()
        guard let first = text.utf8.first else { return nil }
        if first >= UInt8(ascii: "0") && first <= UInt8(ascii: "9") {
            return deltaSeconds(text)
        }
        guard let date = HTTPDate.parse(text, now: now) else { return nil }
        let seconds = date.timeIntervalSince(now)
        guard seconds > 0 else { return .zero }
        return .milliseconds(Int64((min(seconds, Double(maximumSeconds)) * 1000).rounded(.up)))
    }

    /// `1*DIGIT`, capped at ``maximumSeconds``.
    private static func deltaSeconds(_ text: String) -> Duration? {
        var seconds: Int64 = 0
        for byte in text.utf8 {
            guard byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9") else { return nil }
            seconds = min(seconds * 10 + Int64(byte - UInt8(ascii: "0")), maximumSeconds)
        }
        return .seconds(seconds)
    }
}
