import Crypto
import Foundation

/// AWS Signature Version 4 (`AWS4-HMAC-SHA256`): how object storage that speaks the S3 API (AWS
/// S3, MinIO, Ceph RGW, Garage, R2, B2, Wasabi) knows who sends a request and that nothing in it
/// changed on the way.
///
/// A request is signed over its method, path, query, the headers named in `SignedHeaders` and
/// the SHA-256 of its body (`x-amz-content-sha256`, which errorbusd knows of every file before
/// it sends it), with a key derived from the secret access key for one day, region and
/// service. The secret itself never travels.
struct AWSSignatureV4: Sendable, Equatable {
    /// Who signs: the access key id names the key; the secret (and the session token of
    /// temporary credentials) come from a credential, never the configuration.
    struct Credentials: Sendable, Equatable {
        var accessKeyID: String
        var secretAccessKey: String
        /// Temporary credentials' token, sent (and signed) as `x-amz-security-token`.
        var sessionToken: String?
    }

    /// A request as the signer sees it.
    struct Request: Sendable {
        var method: String
        /// The path as sent, already percent-encoded (``encodedPath(_:)`` for an object's key).
        var path: String
        /// The query's parameters, not encoded; a parameter without a value has `""`.
        var query: [(name: String, value: String)] = []
        /// The headers to sign, `host` among them.
        var headers: [(name: String, value: String)]
        /// The body's SHA-256, lowercase hex; ``unsignedPayload`` for a body not hashed.
        var payloadHash: String
    }

    /// What a signed request adds to its headers: `x-amz-date`, `x-amz-content-sha256` for S3,
    /// `x-amz-security-token` for temporary credentials, and `authorization`.
    struct Signed: Sendable, Equatable {
        var headers: [Header]
        var signature: String

        struct Header: Sendable, Equatable {
            var name: String
            var value: String
        }
    }

    var credentials: Credentials
    var region: String
    var service: String = "s3"

    /// The SHA-256 of an empty body.
    static let emptyPayloadHash = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
    /// The payload hash of a body the signature does not cover.
    static let unsignedPayload = "UNSIGNED-PAYLOAD"

    /// Signs `request` as of `date`.
    func sign(_ request: Request, at date: Date) -> Signed {
        let stamp = Self.timestamp(date)
        var request = request
        var added: [Signed.Header] = [.init(name: "x-amz-date", value: stamp)]
        if service == "s3", !request.headers.contains(where: { $0.name.lowercased() == "x-amz-content-sha256" }) {
            added.append(.init(name: "x-amz-content-sha256", value: request.payloadHash))
        }
        if let token = credentials.sessionToken {
            added.append(.init(name: "x-amz-security-token", value: token))
        }
        for header in added where !request.headers.contains(where: { $0.name.lowercased() == header.name }) {
            request.headers.append((header.name, header.value))
        }
        let (canonical, signedHeaders) = canonicalRequest(request)
        let scope = "\(stamp.prefix(8))/\(region)/\(service)/aws4_request"
        let signature = Self.hex(HMAC<SHA256>.authenticationCode(for: Data(stringToSign(canonical, stamp: stamp, scope: scope).utf8), using: signingKey(day: String(stamp.prefix(8)))))
        let authorization = "AWS4-HMAC-SHA256 Credential=\(credentials.accessKeyID)/\(scope), SignedHeaders=\(signedHeaders), Signature=\(signature)"
        return Signed(headers: added + [.init(name: "authorization", value: authorization)], signature: signature)
    }

    /// The canonical request and its `SignedHeaders`: every header given, by lowercase name,
    /// values trimmed and runs of spaces made one, a name given twice joined by commas.
    func canonicalRequest(_ request: Request) -> (text: String, signedHeaders: String) {
        var headers: [String: [String]] = [:]
        for (name, value) in request.headers {
            let trimmed = value.split(separator: " ", omittingEmptySubsequences: true).joined(separator: " ")
            headers[name.lowercased(), default: []].append(trimmed)
        }
        let names = headers.keys.sorted()
        let pairs: [(name: String, value: String)] = request.query.map { (Self.encoded($0.name), Self.encoded($0.value)) }
        let sorted = pairs.sorted { left, right in left.name == right.name ? left.value < right.value : left.name < right.name }
        let query = sorted.map { "\($0.name)=\($0.value)" }.joined(separator: "&")
        // S3 signs the path as sent; the other services, encoded once more.
        let path = request.path.isEmpty ? "/" : request.path
        let uri = service == "s3" ? path : Self.encoded(path, keepingSlashes: true)
        let text = [
            request.method,
            uri,
            query,
            names.map { "\($0):\(headers[$0]!.joined(separator: ","))\n" }.joined(),
            names.joined(separator: ";"),
            request.payloadHash,
        ].joined(separator: "\n")
        return (text, names.joined(separator: ";"))
    }

    func stringToSign(_ canonicalRequest: String, stamp: String, scope: String) -> String {
        "AWS4-HMAC-SHA256\n\(stamp)\n\(scope)\n\(Self.hex(SHA256.hash(data: Data(canonicalRequest.utf8))))"
    }

    /// The key of one day, region and service.
    func signingKey(day: String) -> SymmetricKey {
        var key = SymmetricKey(data: Data("AWS4\(credentials.secretAccessKey)".utf8))
        for part in [day, region, service, "aws4_request"] {
            key = SymmetricKey(data: Data(HMAC<SHA256>.authenticationCode(for: Data(part.utf8), using: key)))
        }
        return key
    }

    /// An object's key as a path to send and sign: each segment percent-encoded, the slashes
    /// kept.
    static func encodedPath(_ key: String) -> String {
        "/" + encoded(key, keepingSlashes: true)
    }

    /// `text` percent-encoded as SigV4 asks: everything but `A–Z a–z 0–9 - _ . ~` (and `/`
    /// when `keepingSlashes`), as uppercase `%XX` of its UTF-8 bytes.
    static func encoded(_ text: String, keepingSlashes: Bool = false) -> String {
        var result = ""
        result.reserveCapacity(text.utf8.count)
        for byte in text.utf8 {
            switch byte {
            case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "0")...UInt8(ascii: "9"),
                UInt8(ascii: "-"), UInt8(ascii: "_"), UInt8(ascii: "."), UInt8(ascii: "~"):
                result.unicodeScalars.append(Unicode.Scalar(byte))
            case UInt8(ascii: "/") where keepingSlashes:
                result.append("/")
            default:
                result += "%" + String(byte, radix: 16, uppercase: true).leftPadded(to: 2)
            }
        }
        return result
    }

    /// `20150830T123600Z`: the request's time, UTC, to the second.
    static func timestamp(_ date: Date) -> String {
        var seconds = time_t(date.timeIntervalSince1970.rounded(.down))
        var parts = tm()
        gmtime_r(&seconds, &parts)
        func two(_ value: Int32) -> String { String(value).leftPadded(to: 2) }
        return "\(parts.tm_year + 1900)\(two(parts.tm_mon + 1))\(two(parts.tm_mday))T\(two(parts.tm_hour))\(two(parts.tm_min))\(two(parts.tm_sec))Z"
    }

    static func hex(_ bytes: some Sequence<UInt8>) -> String {
        bytes.map { String($0, radix: 16).leftPadded(to: 2) }.joined()
    }
}

extension String {
    fileprivate func leftPadded(to width: Int) -> String {
        count >= width ? self : String(repeating: "0", count: width - count) + self
    }
}
