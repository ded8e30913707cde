import ErrorBus
import ErrorBusHTTP
import Foundation
import NIOCore
import NIOHTTP1
import Testing

/// What an object store's XML error document (S3's `<Error><Code>`) makes of an answer: its code
/// says more than the status.
@Suite(.timeLimit(.minutes(1)))
struct HTTPFailureObjectStoreTests {
    static let url = "http://127.0.0.1:9000/errorbus/host-1/2026/11/29/report.txt"

    static func failure(_ status: Int, _ code: String, _ more: String = "", headers: [(String, String)] = [], contentType: String = "application/xml") -> HTTPFailure {
        let body = """
            <?xml version="1.0" encoding="UTF-8"?>
            <Error><Code>\(code)</Code><Message>Words &amp; more words.</Message>\(more)<RequestId>4442587FB7D0A2F9</RequestId></Error>
            """
        return HTTPFailure(
            status: status,
            headers: HTTPHeaders([("Content-Type", contentType)] + headers),
            body: ByteBuffer(string: body),
            method: "PUT",
            url: url,
            now: Date(timeIntervalSince1970: 1_795_000_000)
        )
    }

    @Test(arguments: ["SignatureDoesNotMatch", "InvalidAccessKeyId", "AccessDenied", "ExpiredToken"])
    func aRefusedKeyIsTheRealmsSignInNotTheFiles(_ code: String) {
        let failure = Self.failure(code == "ExpiredToken" ? 400 : 403, code)
        #expect(failure.category == .unauthenticated)
        #expect(failure.cause == "s3" + code)
        #expect(failure.scope == nil, "the realm's: one incident, not one dead letter per file")
        #expect(failure.operatorText.message.contains("Words & more words (\(code))"), "\(failure.operatorText.message)")
    }

    @Test func slowDownIsARateLimitWithItsHint() {
        let failure = Self.failure(503, "SlowDown", headers: [("Retry-After", "3")])
        #expect(failure.category == .rateLimited(retryAfter: .seconds(3)))
        #expect(failure.cause == "s3SlowDown")
        #expect(failure.scope == "http://127.0.0.1:9000")
        let unhinted = Self.failure(503, "SlowDown")
        #expect(unhinted.category == .rateLimited(retryAfter: nil), "a 503 without a hint would be transient; SlowDown still paces")
    }

    @Test func aSkewedClockSaysByHowMuchAndWhichWay() {
        let ahead = Self.failure(403, "RequestTimeTooSkewed", "<RequestTime>20261129T034500Z</RequestTime><ServerTime>2026-11-29T03:28:00Z</ServerTime><MaxAllowedSkewMilliseconds>900000</MaxAllowedSkewMilliseconds>")
        #expect(ahead.category == .transient, "the uploads go on by themselves once the clock is right")
        #expect(ahead.cause == "s3RequestTimeTooSkewed")
        #expect(ahead.operatorText.message.contains("this host's clock is 17 min ahead of 127.0.0.1's"), "\(ahead.operatorText.message)")
        let behind = Self.failure(403, "RequestTimeTooSkewed", "<RequestTime>20261129T020000Z</RequestTime><ServerTime>2026-11-29T03:00:00.000Z</ServerTime>")
        #expect(behind.operatorText.message.contains("60 min behind"), "\(behind.operatorText.message)")
    }

    @Test func aMissingBucketIsNamedAndHoldsTheStoreNotTheFile() {
        let failure = Self.failure(404, "NoSuchBucket", "<BucketName>errorbus</BucketName>")
        #expect(failure.category == .unreachable, "a 404 would set each file aside as a dead letter")
        #expect(failure.scope == "http://127.0.0.1:9000")
        #expect(failure.cause == "s3NoSuchBucket")
        #expect(failure.operatorText.message.hasPrefix("127.0.0.1 has no bucket \"errorbus\""), "\(failure.operatorText.message)")
    }

    @Test func aFileTooLargeIsThatFilesAlone() {
        let failure = Self.failure(400, "EntityTooLarge", "<ProposedSize>6000000000</ProposedSize><MaxSizeAllowed>5368709120</MaxSizeAllowed>")
        #expect(failure.category.kind == .invalid)
        #expect(failure.cause == "s3EntityTooLarge")
        #expect(failure.operatorText.message.contains("at most 5368709120 bytes"))
    }

    @Test func anInternalErrorAndAnUnknownCodeGoByTheStatus() {
        #expect(Self.failure(500, "InternalError").category == .transient)
        #expect(Self.failure(500, "InternalError").cause == "http500")
        #expect(Self.failure(409, "BucketNotEmpty").category.kind == .invalid)
        #expect(Self.failure(409, "BucketNotEmpty").operatorText.message.contains("Words & more words (BucketNotEmpty)"))
    }

    @Test func aBodyThatIsNotAnErrorDocumentIsNotReadAsOne() {
        // HTML that happens to mention the tags, as a proxy's page might.
        let page = Self.failure(403, "SignatureDoesNotMatch", contentType: "text/html")
        #expect(page.category.kind == .invalid)
        #expect(page.cause == "http403")
    }
}
