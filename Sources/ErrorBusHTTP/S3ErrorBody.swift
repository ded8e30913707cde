#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
#if canImport(Glibc)
import Glibc
#endif

/// The error document of an object store speaking the S3 API:
/// `<Error><Code>SignatureDoesNotMatch</Code><Message>…</Message>…</Error>` as XML.
///
/// Read with a few string searches rather than an XML parser: the document is flat, a few
/// hundred bytes, and only its first elements of a name matter.
struct S3ErrorBody: Sendable, Hashable {
    /// `SignatureDoesNotMatch`, `NoSuchBucket`, `SlowDown`, …
    var code: String
    /// For a person, when the server gave one.
    var message: String?
    /// `NoSuchBucket`: the bucket asked for.
    var bucketName: String?
    /// `RequestTimeTooSkewed`: the request's `x-amz-date` and the server's time.
    var requestTime: Date?
    var serverTime: Date?
    /// `EntityTooLarge`: the size sent and the most the server takes, in bytes.
    var proposedSize: Int64?
    var maxSizeAllowed: Int64?

    /// `message (code)`, or the code alone.
    var explanation: String {
        guard var message, !message.isEmpty else { return code }
        if message.hasSuffix(".") { message.removeLast() }
        return "\(message) (\(code))"
    }

    /// How far this host's clock is ahead of the server's (negative: behind), when the answer
    /// tells both times.
    var clockSkew: Duration? {
        guard let requestTime, let serverTime else { return nil }
        return .seconds(requestTime.timeIntervalSince(serverTime))
    }

    /// The error in `body` when it is an XML `<Error>` document with a `<Code>`; `nil` otherwise.
    static func parse(contentType: String?, body: [UInt8]) -> S3ErrorBody? {
        if let contentType, !["application/xml", "text/xml"].contains(MediaType.essence(of: contentType)) { return nil }
        guard !body.isEmpty else { return nil }
        let text = String(decoding: body.prefix(HTTPFailure.errorBodyLimit), as: UTF8.self)
        guard text.contains("<Error>"), let code = S3XML.element("Code", in: text), !code.isEmpty else { return nil }
        return S3ErrorBody(
            code: code,
            message: S3XML.element("Message", in: text),
            bucketName: S3XML.element("BucketName", in: text),
            requestTime: S3XML.element("RequestTime", in: text).flatMap(time),
            serverTime: S3XML.element("ServerTime", in: text).flatMap(time),
            proposedSize: S3XML.element("ProposedSize", in: text).flatMap { Int64($0) },
            maxSizeAllowed: S3XML.element("MaxSizeAllowed", in: text).flatMap { Int64($0) }
        )
    }

    /// `20261129T023000Z` (SigV4's) or `2026-11-29T02:30:00Z` / `2026-11-29T02:30:00.000Z` (ISO 8601),
    /// UTC.
    static func time(_ text: String) -> Date? {
        let digits = text.filter(\.isNumber)
        guard text.hasSuffix("Z"), digits.count >= 14 else { return nil }
        let numbers = digits.utf8.map { Int32($0 - UInt8(ascii: "0")) }
        func number(_ start: Int, _ count: Int) -> Int32 { numbers[start..<start + count].reduce(0) { $0 * 10 + $1 } }
        var parts = tm()
        parts.tm_year = number(0, 4) - 1900
        parts.tm_mon = number(4, 2) - 1
        parts.tm_mday = number(6, 2)
        parts.tm_hour = number(8, 2)
        parts.tm_min = number(10, 2)
        parts.tm_sec = number(12, 2)
        let seconds = timegm(&parts)
        guard seconds != -1 else { return nil }
        return Date(timeIntervalSince1970: Double(seconds))
    }
}

/// The few elements errorbusd reads of S3's XML answers.
package enum S3XML {
    /// The text of the first `<name>…</name>`, its entities decoded.
    package static func element(_ name: String, in text: String) -> String? {
        guard let open = text.firstRange(of: "<\(name)>"), let close = text[open.upperBound...].firstRange(of: "</\(name)>") else {
            return nil
        }
        return String(text[open.upperBound..<close.lowerBound])
            .replacing("&quot;", with: "\"").replacing("&lt;", with: "<").replacing("&gt;", with: ">")
            .replacing("&apos;", with: "'").replacing("&amp;", with: "&")
            .trimmingASCIIWhitespace()
    }

    /// `text` with XML's special characters escaped.
    package static func escaped(_ text: String) -> String {
        text.replacing("&", with: "&amp;").replacing("<", with: "&lt;").replacing(">", with: "&gt;").replacing("\"", with: "&quot;")
    }
}
