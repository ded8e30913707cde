import AsyncHTTPClient
import Crypto
@testable import ErrorBusDaemon
import Foundation
import NIOHTTP1
import Testing

/// The signer against the signatures AWS publishes: its Signature Version 4 test suite (the
/// generic algorithm, service `service`, 2015-08-30T12:36:00Z) and the worked examples of the S3
/// documentation (bucket `examplebucket`, 2013-05-24). One character of difference in a canonical
/// request gives another signature.
@Suite struct AWSSignatureV4Tests {
    static let suite = AWSSignatureV4(
        credentials: .init(accessKeyID: "AKIDEXAMPLE", secretAccessKey: "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY"),
        region: "us-east-1",
        service: "service"
    )
    static let suiteDate = Date(timeIntervalSince1970: 1_440_938_160)
    static let unreserved = "-._~0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"

    struct Vector: Sendable, CustomTestStringConvertible {
        var name: String
        var method = "GET"
        var path = "/"
        var query: [(name: String, value: String)] = []
        var headers: [(name: String, value: String)] = []
        var body = ""
        var sessionToken: String?
        var signedHeaders = "host;x-amz-date"
        var signature: String

        var testDescription: String { name }
    }

    static let vectors: [Vector] = [
        Vector(name: "get-vanilla", signature: "5fa00fa31553b73ebf1942676e86291e8372ff2a2260956d9b8aae1d763fbf31"),
        Vector(name: "get-vanilla-empty-query-key", query: [("Param1", "value1")], signature: "a67d582fa61cc504c4bae71f336f98b97f1ea3c7a6bfe1b6e45aec72011b9aeb"),
        Vector(name: "get-vanilla-query-order-key-case", query: [("Param2", "value2"), ("Param1", "value1")], signature: "b97d918cfa904a5beff61c982a1b6f458b799221646efd99d3219ec94cdf2500"),
        Vector(name: "get-vanilla-query-unreserved", query: [(unreserved, unreserved)], signature: "9c3e54bfcdf0b19771a7f523ee5669cdf59bc7cc0884027167c21bb143a40197"),
        Vector(name: "get-vanilla-utf8-query", query: [("\u{1234}", "bar")], signature: "2cdec8eed098649ff3a119c94853b13c643bcf08f8b0a1d91e12c9027818dd04"),
        Vector(name: "get-unreserved", path: "/" + unreserved, signature: "07ef7494c76fa4850883e2b006601f940f8a34d404d0cfa977f52a65bbf5f24f"),
        Vector(
            name: "get-header-key-duplicate",
            headers: [("My-Header1", "value2"), ("My-Header1", "value2"), ("My-Header1", "value1")],
            signedHeaders: "host;my-header1;x-amz-date",
            signature: "c9d5ea9f3f72853aea855b47ea873832890dbdd183b4468f858259531a5138ea"
        ),
        Vector(
            name: "get-header-value-trim",
            headers: [("My-Header1", " value1"), ("My-Header2", "\"a   b   c\"")],
            signedHeaders: "host;my-header1;my-header2;x-amz-date",
            signature: "acc3ed3afb60bb290fc8d2dd0098b9911fcaa05412b367055dee359757a9c736"
        ),
        Vector(name: "post-vanilla", method: "POST", signature: "5da7c1a2acd57cee7505fc6676e4e544621c30862966e37dddb68e92efbe5d6b"),
        Vector(name: "post-vanilla-query", method: "POST", query: [("Param1", "value1")], signature: "28038455d6de14eafc1f9222cf5aa6f1a96197d7deb8263271d420d138af7f11"),
        Vector(
            name: "post-vanilla-query-nonunreserved",
            method: "POST",
            query: [("@#$%^", ""), ("+", "/,?><`\";:\\|][{}")],
            signature: "66c82657c86e26fb25238d0e69f011edc4c6df5ae71119d7cb98ed9b87393c1e"
        ),
        Vector(
            name: "post-header-key-sort",
            method: "POST",
            headers: [("My-Header1", "value1")],
            signedHeaders: "host;my-header1;x-amz-date",
            signature: "c5410059b04c1ee005303aed430f6e6645f61f4dc9e1461ec8f8916fdf18852c"
        ),
        Vector(
            name: "post-header-value-case",
            method: "POST",
            headers: [("My-Header1", "VALUE1")],
            signedHeaders: "host;my-header1;x-amz-date",
            signature: "cdbc9802e29d2942e5e10b5bccfdd67c5f22c7c4e8ae67b53629efa58b974b7d"
        ),
        Vector(
            name: "post-sts-header-before",
            method: "POST",
            sessionToken: "AQoDYXdzEPT//////////wEXAMPLEtc764bNrC9SAPBSM22wDOk4x4HIZ8j4FZTwdQWLWsKWHGBuFqwAeMicRXmxfpSPfIeoIYRqTflfKD8YUuwthAx7mSEI/qkPpKPi/kMcGdQrmGdeehM4IC1NtBmUpp2wUE8phUZampKsburEDy0KPkyQDYwT7WZ0wq5VSXDvp75YU9HFvlRd8Tx6q6fE8YQcHNVXAkiY9q6d+xo0rKwT38xVqr7ZD0u0iPPkUL64lIZbqBAz+scqKmlzm8FDrypNC9Yjc8fPOLn9FX9KSYvKTr4rvx3iSIlTJabIQwj2ICCR/oLxBA==",
            signedHeaders: "host;x-amz-date;x-amz-security-token",
            signature: "85d96828115b5dc0cfc3bd16ad9e210dd772bbebba041836c64533a82be05ead"
        ),
        Vector(
            name: "post-x-www-form-urlencoded",
            method: "POST",
            headers: [("Content-Type", "application/x-www-form-urlencoded")],
            body: "Param1=value1",
            signedHeaders: "content-type;host;x-amz-date",
            signature: "ff11897932ad3f4e8b18135d722051e5ac45fc38421b1da7b9d196a0fe09473a"
        ),
        Vector(
            name: "post-x-www-form-urlencoded-parameters",
            method: "POST",
            headers: [("Content-Type", "application/x-www-form-urlencoded; charset=utf8")],
            body: "Param1=value1",
            signedHeaders: "content-type;host;x-amz-date",
            signature: "1a72ec8f64bd914b0e42e42607c7fbce7fb2c7465f63e3092b3b0d39fa77a6fe"
        ),
    ]

    @Test(arguments: vectors)
    func theTestSuitesSignatures(_ vector: Vector) {
        var signer = Self.suite
        signer.credentials.sessionToken = vector.sessionToken
        let request = AWSSignatureV4.Request(
            method: vector.method,
            path: vector.path,
            query: vector.query,
            headers: [("Host", "example.amazonaws.com")] + vector.headers,
            payloadHash: AWSSignatureV4.hex(SHA256Digest.of(vector.body))
        )
        let signed = signer.sign(request, at: Self.suiteDate)
        #expect(signed.signature == vector.signature)
        let authorization = signed.headers.first { $0.name == "authorization" }?.value
        #expect(authorization == "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20150830/us-east-1/service/aws4_request, SignedHeaders=\(vector.signedHeaders), Signature=\(vector.signature)")
        #expect(signed.headers.first?.value == "20150830T123600Z")
    }

    static let s3 = AWSSignatureV4(
        credentials: .init(accessKeyID: "AKIAIOSFODNN7EXAMPLE", secretAccessKey: "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"),
        region: "us-east-1"
    )
    static let s3Date = Date(timeIntervalSince1970: 1_369_353_600)
    static let s3Host = ("Host", "examplebucket.s3.amazonaws.com")

    /// S3's own examples: the path signed as sent (not encoded twice), `x-amz-content-sha256`
    /// added and signed, a query parameter without a value, a query given out of order.
    @Test func theS3DocumentationsExamples() {
        let ranged = Self.s3.sign(.init(method: "GET", path: "/test.txt", headers: [Self.s3Host, ("Range", "bytes=0-9")], payloadHash: AWSSignatureV4.emptyPayloadHash), at: Self.s3Date)
        #expect(ranged.signature == "f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41")
        #expect(ranged.headers.contains(.init(name: "x-amz-content-sha256", value: AWSSignatureV4.emptyPayloadHash)))

        let path = AWSSignatureV4.encodedPath("test$file.text")
        #expect(path == "/test%24file.text")
        let put = Self.s3.sign(
            .init(
                method: "PUT",
                path: path,
                headers: [Self.s3Host, ("Date", "Fri, 24 May 2013 00:00:00 GMT"), ("x-amz-storage-class", "REDUCED_REDUNDANCY")],
                payloadHash: AWSSignatureV4.hex(SHA256Digest.of("Welcome to Amazon S3."))
            ),
            at: Self.s3Date
        )
        #expect(put.signature == "98ad721746da40c64f1a55b78f14c238d841ea1380cd77a1b5971af0ece108bd")
        #expect(put.headers.last?.value.contains("SignedHeaders=date;host;x-amz-content-sha256;x-amz-date;x-amz-storage-class,") == true)

        let lifecycle = Self.s3.sign(.init(method: "GET", path: "/", query: [("lifecycle", "")], headers: [Self.s3Host], payloadHash: AWSSignatureV4.emptyPayloadHash), at: Self.s3Date)
        #expect(lifecycle.signature == "fea454ca298b7da1c68078a5d1bdbfbbe0d65c699e0f91ac7a200a0136783543")
        let listed = Self.s3.sign(.init(method: "GET", path: "/", query: [("prefix", "J"), ("max-keys", "2")], headers: [Self.s3Host], payloadHash: AWSSignatureV4.emptyPayloadHash), at: Self.s3Date)
        #expect(listed.signature == "34b48302e7b5fa45bde8084f4b7868a86f0a534bc59db6670ed5711ef69dc6f7")
    }

    /// Another secret, another day, another region: another signature (the key is derived from
    /// all of them).
    @Test func theKeyFollowsTheSecretTheDayAndTheRegion() {
        let request = AWSSignatureV4.Request(method: "GET", path: "/", headers: [Self.s3Host], payloadHash: AWSSignatureV4.emptyPayloadHash)
        let signature = Self.s3.sign(request, at: Self.s3Date).signature
        var other = Self.s3
        other.credentials.secretAccessKey += "x"
        #expect(other.sign(request, at: Self.s3Date).signature != signature)
        #expect(Self.s3.sign(request, at: Self.s3Date.addingTimeInterval(86_400)).signature != signature)
        other = Self.s3
        other.region = "eu-west-1"
        #expect(other.sign(request, at: Self.s3Date).signature != signature)
    }
}

extension SHA256Digest {
    fileprivate static func of(_ text: String) -> SHA256Digest {
        SHA256.hash(data: Data(text.utf8))
    }
}

/// The uploader's and the loader's signing: a request signed as it will be sent.
@Suite(.timeLimit(.minutes(1)))
struct AWSSignatureV4RequestTests {
    /// The S3 documentation's list and lifecycle examples, made from the request's URL: the host
    /// without its default port, the query taken apart and put in order.
    @Test func aRequestIsSignedFromItsURL() {
        var listed = HTTPClientRequest(url: "https://examplebucket.s3.amazonaws.com/?max-keys=2&prefix=J")
        AWSSignatureV4Tests.s3.sign(&listed, payloadHash: AWSSignatureV4.emptyPayloadHash, at: AWSSignatureV4Tests.s3Date)
        #expect(listed.headers.first(name: "Host") == "examplebucket.s3.amazonaws.com")
        #expect(listed.headers.first(name: "x-amz-date") == "20130524T000000Z")
        #expect(listed.headers.first(name: "Authorization")?.hasSuffix("Signature=34b48302e7b5fa45bde8084f4b7868a86f0a534bc59db6670ed5711ef69dc6f7") == true)

        var lifecycle = HTTPClientRequest(url: "https://examplebucket.s3.amazonaws.com/?lifecycle")
        AWSSignatureV4Tests.s3.sign(&lifecycle, payloadHash: AWSSignatureV4.emptyPayloadHash, at: AWSSignatureV4Tests.s3Date)
        #expect(lifecycle.headers.first(name: "Authorization")?.hasSuffix("Signature=fea454ca298b7da1c68078a5d1bdbfbbe0d65c699e0f91ac7a200a0136783543") == true)
    }

    /// The `x-amz-` headers and the content type are signed, others not; a port not the scheme's
    /// default is part of the host signed; a session's token is sent and signed.
    @Test func theHeadersSignedAreTheStoresOwn() {
        var signer = AWSSignatureV4Tests.s3
        signer.credentials.sessionToken = "FQoGZXIvYXdzEXAMPLE"
        var request = HTTPClientRequest(url: "http://127.0.0.1:9000/bucket/host/a%20b.txt")
        request.method = .PUT
        request.headers.add(name: "Content-Type", value: "application/octet-stream")
        request.headers.add(name: "x-amz-checksum-sha256", value: "n4bQgYhMfWWaL+qgxVrQFaO/TxsrC4Is0V1sFbDwCgg=")
        request.headers.add(name: "X-Tenant", value: "acme")
        signer.sign(&request, payloadHash: AWSSignatureV4.unsignedPayload, at: AWSSignatureV4Tests.s3Date)
        #expect(request.headers.first(name: "Host") == "127.0.0.1:9000")
        #expect(request.headers.first(name: "x-amz-security-token") == "FQoGZXIvYXdzEXAMPLE")
        #expect(request.headers.first(name: "x-amz-content-sha256") == "UNSIGNED-PAYLOAD")
        let authorization = request.headers.first(name: "Authorization") ?? ""
        #expect(authorization.contains("SignedHeaders=content-type;host;x-amz-checksum-sha256;x-amz-content-sha256;x-amz-date;x-amz-security-token,"), "\(authorization)")
        #expect(request.headers["Authorization"].count == 1)
    }
}
