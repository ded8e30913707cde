#if canImport(FoundationEssentials)
package import FoundationEssentials
#else
package import Foundation
#endif
#if canImport(Glibc)
import Glibc
#endif

/// How the API takes an upload (`api.upload.*`): what errorbusd sends for one outbox file, and
/// which answer means that the API has it.
///
/// The default is the bundled sandbox's contract: `PUT /v1/items/{sha256}` with the raw file, the
/// SHA-256 as `Idempotency-Key`, any 2xx, and a JSON receipt whose `sha256` is the file's.
package struct UploadContract: Sendable, Equatable {
    /// `api.upload.method`.
    package enum Method: String, Sendable, Equatable, CaseIterable {
        case put = "PUT"
        case post = "POST"
    }

    /// `api.upload.body` (and `api.upload.multipart-field`).
    package enum Body: Sendable, Equatable {
        /// The file's bytes as the body, `Content-Type: application/octet-stream`.
        case raw
        /// `multipart/form-data` with one part: the file, as form field `field`, with its name
        /// as the part's file name.
        case multipart(field: String)
    }

    /// One of `api.upload.headers`: `NAME: VALUE`, the value a template.
    package struct Header: Sendable, Equatable {
        package var name: String
        package var value: UploadTemplate

        package init(name: String, value: UploadTemplate) {
            self.name = name
            self.value = value
        }
    }

    /// What a `412 Precondition Failed` to an upload means, when `api.upload.headers` asks the
    /// server never to replace what it has (`If-None-Match: *`): something is stored at the file's
    /// URL already.
    package enum Existing: Sendable, Equatable {
        /// The URL is made of the file's content (`{sha256}`, `{sha256-base64}`): what is stored
        /// there is this file, delivered before (an answer lost, a file dropped again).
        case delivered
        /// Another object may hold the URL (a file of the same name): this file's own failure.
        case refused
    }

    /// `api.upload.receipt.*`: what in a delivered answer proves it is the API's answer for this
    /// file, not a proxy's or a captive portal's `200`.
    package enum Receipt: Sendable, Equatable {
        /// The JSON body's value at this pointer (RFC 6901) is the file's SHA-256, in hex.
        case jsonPointer(String)
        /// The answer's header `name` equals `value`, rendered for the file
        /// (`"{sha256}"` for a quoted hex digest, `{sha256-base64}` for a base64 one).
        case header(name: String, value: UploadTemplate)
    }

    /// `api.upload.method`. Default `PUT`.
    package var method: Method
    /// `api.upload.url`: a path under `api.base-url` or a whole URL, as configured; ``url(base:)``
    /// resolves it. Default `/v1/items/{sha256}`.
    package var url: UploadTemplate
    /// `api.upload.body`. Default `.raw`.
    package var body: Body
    /// `api.upload.headers`. Default none.
    package var headers: [Header]
    /// `api.upload.idempotency-header`: the header carrying the job's key (the SHA-256, or that of
    /// the SHA-256 and the name when ``tellsFilesByName``), so that the API can tell a repeated
    /// upload; `nil` sends none. Default `Idempotency-Key`.
    package var idempotencyHeader: String?
    /// `api.upload.delivered`. Default every 2xx.
    package var delivered: DeliveredStatuses
    /// What a `412` means: `nil` unless `api.upload.headers` holds `If-None-Match: *`.
    package var existing: Existing? {
        guard headers.contains(where: { $0.name.lowercased() == "if-none-match" && $0.value == UploadTemplate(parts: [.text("*")]) }) else {
            return nil
        }
        return url.parts.contains { $0 == .sha256 || $0 == .sha256Base64 } ? .delivered : .refused
    }
    /// `api.upload.receipt.*`; `nil` checks none. Default the JSON pointer `/sha256`.
    package var receipt: Receipt?
    /// `api.upload.parts.*`: files larger than a threshold go in parts (S3's multipart upload);
    /// `nil`, the default: every file in one request.
    package var parts: Parts?

    /// `api.upload.parts.*`: how a large file is sent in parts, each checked by its SHA-256, the
    /// parts done kept in the store so that an interruption resumes at the next one.
    package struct Parts: Sendable, Equatable {
        /// `above`: files larger than this go in parts.
        package var above: Int64
        /// `size`: the size of every part but the last. Default 16 MiB.
        package var size: Int64
        /// `parallel`: how many parts of one file are sent at once. Default 4.
        package var parallel: Int

        /// S3's bounds: parts of 5 MiB to 5 GiB (the last may be smaller), at most 10,000.
        package static let minimumSize: Int64 = 5 << 20
        package static let maximumSize: Int64 = 5 << 30
        package static let maximumCount: Int64 = 10_000

        package init(above: Int64, size: Int64 = 16 << 20, parallel: Int = 4) {
            self.above = above
            self.size = size
            self.parallel = parallel
        }

        /// The part size for a file of `fileSize` bytes: ``size``, or more for a file that would
        /// need more than 10,000 parts (rounded up to a MiB).
        package func partSize(for fileSize: Int64) -> Int64 {
            let least = (fileSize + Self.maximumCount - 1) / Self.maximumCount
            guard least > size else { return size }
            return (least + (1 << 20) - 1) / (1 << 20) * (1 << 20)
        }
    }

    package init(
        method: Method = .put,
        url: UploadTemplate = UploadTemplate(literal: "/v1/items/", .sha256),
        body: Body = .raw,
        headers: [Header] = [],
        idempotencyHeader: String? = "Idempotency-Key",
        delivered: DeliveredStatuses = .successful,
        receipt: Receipt? = .jsonPointer("/sha256"),
        parts: Parts? = nil
    ) {
        self.method = method
        self.url = url
        self.body = body
        self.headers = headers
        self.idempotencyHeader = idempotencyHeader
        self.delivered = delivered
        self.receipt = receipt
        self.parts = parts
    }

    /// Whether the API tells files by their name: `{name}` in the URL, a header or the receipt,
    /// or a multipart body (whose part names the file). Then one content under two names is two
    /// uploads, where otherwise it is one.
    package var tellsFilesByName: Bool {
        if case .multipart = body { return true }
        var templates = [url] + headers.map(\.value)
        if case .header(_, let value) = receipt { templates.append(value) }
        return templates.contains { $0.parts.contains(.name) }
    }

    /// The URL template made absolute: a configured path is appended to `base`.
    package func url(base: String) -> UploadTemplate {
        url.isPath ? UploadTemplate(parts: [.text(base)] + url.parts) : url
    }
}

/// `api.upload.delivered`: the statuses that mean the API has the file.
package struct DeliveredStatuses: Sendable, Equatable, CustomStringConvertible {
    /// Single statuses, all 2xx.
    package var statuses: Set<Int>
    /// Whether every 2xx counts.
    package var anySuccessful: Bool

    /// Every 2xx status.
    package static let successful = DeliveredStatuses(statuses: [], anySuccessful: true)

    package init(statuses: Set<Int>, anySuccessful: Bool = false) {
        self.statuses = statuses
        self.anySuccessful = anySuccessful
    }

    package func contains(_ status: Int) -> Bool {
        (anySuccessful && (200...299).contains(status)) || statuses.contains(status)
    }

    /// Parses the list's entries: `2xx`, or single statuses from 200 to 299. A redirect is never a
    /// delivery, nor is an error.
    package static func parse(_ entries: [String]) -> Result<DeliveredStatuses, ParseError> {
        var delivered = DeliveredStatuses(statuses: [])
        for entry in entries {
            if entry.lowercased() == "2xx" {
                delivered.anySuccessful = true
            } else if let status = Int(entry), (200...299).contains(status) {
                delivered.statuses.insert(status)
            } else {
                return .failure(ParseError(entry: entry))
            }
        }
        guard delivered.anySuccessful || !delivered.statuses.isEmpty else { return .failure(ParseError(entry: "")) }
        return .success(delivered)
    }

    package struct ParseError: Error {
        package let entry: String
    }

    /// `2xx`, or the statuses in order (`201, 204`).
    package var description: String {
        ((anySuccessful ? ["2xx"] : []) + statuses.sorted().map(String.init)).joined(separator: ", ")
    }
}

/// What a template is rendered for: one outbox file.
package struct UploadItem: Sendable {
    /// The file's SHA-256, 64 lowercase hex digits.
    package var sha256: String
    /// The file's name in the outbox.
    package var name: String
    /// Its size in bytes.
    package var size: Int64
    /// When its job was queued: the day a template's date is of, so that every attempt, whenever
    /// it runs, sends the file to one place.
    package var queuedAt: Date

    package init(sha256: String, name: String, size: Int64, queuedAt: Date = Date(timeIntervalSince1970: 0)) {
        self.sha256 = sha256
        self.name = name
        self.size = size
        self.queuedAt = queuedAt
    }
}

/// A text with placeholders for an outbox file's facts: `{sha256}` (hex), `{sha256-base64}`,
/// `{name}` (percent-encoded, so it is safe in a path segment and a header alike), `{size}`
/// (bytes), the UTC date its job was queued (`{year}`, `{month}`, `{day}`, `{hour}`, two digits but
/// the year) and the host's name (`{hostname}`), e.g. an object's key
/// `/logs/{hostname}/{year}/{month}/{day}/{name}`. In `api.upload.headers`, `{credential:NAME}` is a credential's text, read when the
/// configuration is loaded.
package struct UploadTemplate: Sendable, Equatable, CustomStringConvertible {
    package enum Part: Sendable, Equatable {
        case text(String)
        case sha256
        case sha256Base64
        case name
        case size
        case year
        case month
        case day
        case hour
        /// The host's name, as `gethostname(2)` tells it when the template is read.
        case hostname(String)
        /// A credential's text (`{credential:NAME}`), kept out of descriptions.
        case secret(name: String, Secret)
    }

    package var parts: [Part]

    package init(parts: [Part]) {
        self.parts = parts
    }

    /// A literal text followed by placeholders.
    package init(literal: String, _ placeholders: Part...) {
        self.init(parts: [.text(literal)] + placeholders)
    }

    /// The placeholders ``parse(_:credential:)`` knows, as written between braces.
    package static let placeholders: [(name: String, part: Part)] = [
        ("sha256", .sha256), ("sha256-base64", .sha256Base64), ("name", .name), ("size", .size),
        ("year", .year), ("month", .month), ("day", .day), ("hour", .hour), ("hostname", .hostname(hostName)),
    ]

    /// What a template may hold, for error messages.
    package static let expectation = "{sha256}, {sha256-base64}, {name}, {size}, {year}, {month}, {day}, {hour} or {hostname}"

    /// This host's name, percent-encoded.
    private static let hostName: String = {
        var buffer = [CChar](repeating: 0, count: 256)
        guard gethostname(&buffer, buffer.count - 1) == 0 else { return "localhost" }
        return percentEncoded(String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self))
    }()

    /// Why a template does not parse.
    package enum ParseError: Error, CustomStringConvertible {
        case unknownPlaceholder(String)
        case unclosedBrace
        case credential(String)

        package var description: String {
            switch self {
            case .unknownPlaceholder(let name): "unknown placeholder {\(name)}; expected \(UploadTemplate.expectation)"
            case .unclosedBrace: "a { without its }"
            case .credential(let reason): reason
            }
        }
    }

    /// Parses `text`. `credential` reads `{credential:NAME}`; without it, that placeholder is
    /// unknown.
    package static func parse(
        _ text: String,
        credential: ((String) throws(ParseError) -> Secret)? = nil
    ) throws(ParseError) -> UploadTemplate {
        var parts: [Part] = []
        var literal = ""
        var rest = Substring(text)
        while let open = rest.firstIndex(of: "{") {
            literal += rest[..<open]
            guard let close = rest[open...].firstIndex(of: "}") else { throw .unclosedBrace }
            let name = String(rest[rest.index(after: open)..<close])
            if !literal.isEmpty {
                parts.append(.text(literal))
                literal = ""
            }
            if let known = placeholders.first(where: { $0.name == name }) {
                parts.append(known.part)
            } else if name.hasPrefix("credential:"), let credential {
                let credentialName = String(name.dropFirst("credential:".count))
                parts.append(.secret(name: credentialName, try credential(credentialName)))
            } else {
                throw .unknownPlaceholder(name)
            }
            rest = rest[rest.index(after: close)...]
        }
        literal += rest
        if !literal.isEmpty { parts.append(.text(literal)) }
        return UploadTemplate(parts: parts)
    }

    /// Whether the template starts with `/`: a path under the base URL.
    package var isPath: Bool {
        if case .text(let text) = parts.first { return text.hasPrefix("/") }
        return false
    }

    /// The text for `item`.
    package func render(_ item: UploadItem) -> String {
        var text = ""
        var date: tm?
        func queued() -> tm {
            if let date { return date }
            var seconds = time_t(item.queuedAt.timeIntervalSince1970.rounded(.down))
            var parts = tm()
            gmtime_r(&seconds, &parts)
            date = parts
            return parts
        }
        func twoDigits(_ value: Int32) -> String { value < 10 ? "0\(value)" : String(value) }
        for part in parts {
            switch part {
            case .text(let literal): text += literal
            case .sha256: text += item.sha256
            case .sha256Base64: text += Self.base64(hex: item.sha256)
            case .name: text += Self.percentEncoded(item.name)
            case .size: text += String(item.size)
            case .year: text += String(queued().tm_year + 1900)
            case .month: text += twoDigits(queued().tm_mon + 1)
            case .day: text += twoDigits(queued().tm_mday)
            case .hour: text += twoDigits(queued().tm_hour)
            case .hostname(let name): text += name
            case .secret(_, let secret): text += secret.value
            }
        }
        return text
    }

    /// The template as written, credentials by name only.
    package var description: String {
        parts.map { part in
            switch part {
            case .text(let literal): literal
            case .sha256: "{sha256}"
            case .sha256Base64: "{sha256-base64}"
            case .name: "{name}"
            case .size: "{size}"
            case .year: "{year}"
            case .month: "{month}"
            case .day: "{day}"
            case .hour: "{hour}"
            case .hostname: "{hostname}"
            case .secret(let name, _): "{credential:\(name)}"
            }
        }.joined()
    }

    /// Everything but RFC 3986's unreserved characters percent-encoded: safe in a path segment,
    /// a query and a header value alike.
    package static func percentEncoded(_ text: String) -> String {
        var encoded = ""
        for byte in text.utf8 {
            switch byte {
            case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "0")...UInt8(ascii: "9"),
                UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "_"), UInt8(ascii: "~"):
                encoded.unicodeScalars.append(Unicode.Scalar(byte))
            default:
                encoded += "%" + String(byte >> 4, radix: 16, uppercase: true) + String(byte & 0xF, radix: 16, uppercase: true)
            }
        }
        return encoded
    }

    /// The base64 form (RFC 4648, padded) of a hex digest.
    package static func base64(hex: String) -> String {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(hex.utf8.count / 2)
        var high: UInt8?
        for character in hex.utf8 {
            guard let nibble = UInt8(String(UnicodeScalar(character)), radix: 16) else { continue }
            if let first = high {
                bytes.append(first << 4 | nibble)
                high = nil
            } else {
                high = nibble
            }
        }
        return Data(bytes).base64EncodedString()
    }
}
