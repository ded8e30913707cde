import ErrorBus
import ErrorBusDaemon
import ErrorBusHTTP
import Foundation
import NIOCore
import NIOHTTP1
import Testing

/// `HTTPFailure(status:headers:body:method:url:now:)`, status by status.
@Suite(.timeLimit(.minutes(1)))
struct HTTPFailureStatusTests {
    static let url = "https://API.example.net:8443/v1/items/report-1?x=1"
    static let now = Date(timeIntervalSince1970: 1_445_412_480)

    static func failure(
        _ status: Int,
        _ headers: [(String, String)] = [],
        body: String? = nil,
        method: String = "PUT"
    ) -> HTTPFailure {
        HTTPFailure(
            status: status,
            headers: HTTPHeaders(headers),
            body: body.map { ByteBuffer(string: $0) },
            method: method,
            url: url,
            now: now
        )
    }

    static let problemJSON = ("Content-Type", "application/problem+json")

    @Test func theOriginIsTheScopeLowercased() {
        let failure = Self.failure(500)
        #expect(failure.host == "api.example.net")
        #expect(failure.scope == "https://api.example.net:8443")
        #expect(failure.operatorText.message.hasPrefix("api.example.net failed to handle PUT /v1/items/report-1?x=1"))
    }

    @Test func unauthorizedUsesTheBearerChallengesDescription() {
        let failure = Self.failure(
            401,
            [("WWW-Authenticate", #"Bearer realm="api", error="invalid_token", error_description="The access token expired."#)]
        )
        #expect(failure.category == .unauthenticated)
        #expect(failure.cause == "http401")
        #expect(failure.scope == nil)
        #expect(failure.operatorText.title == "Access token refused")
        #expect(
            failure.operatorText.message
                == "api.example.net refused the credentials sent with PUT /v1/items/report-1?x=1: The access token expired (invalid_token)."
        )
        #expect(failure.operatorText.next == nil, "the bus supplies what happens next: one sign-in")
    }

    @Test func unauthorizedWithoutAReasonSaysSo() {
        let failure = Self.failure(401, [("WWW-Authenticate", "Basic realm=\"x\"")])
        #expect(failure.operatorText.title == "Credentials refused")
        #expect(failure.operatorText.message.hasSuffix("without saying why."))
    }

    @Test func forbiddenIsInvalidAndSaysSigningInAgainWillNotHelp() {
        let failure = Self.failure(403, [Self.problemJSON], body: #"{"title":"Forbidden","detail":"Client may not write items."}"#)
        #expect(failure.category == .invalid(reason: "403 Forbidden: Client may not write items."))
        #expect(failure.cause == "http403")
        #expect(failure.operatorText.title == "Request forbidden")
        #expect(failure.operatorText.message.contains("signing in again will not help"))
    }

    @Test func aProblemsTitleAndDetailBecomeTheReason() {
        let failure = Self.failure(
            422,
            [("Content-Type", "application/problem+json; charset=utf-8")],
            body: #"{"type":"https://example.net/probs/validation","title":"Validation failed","status":422,"detail":"The title field is required.","instance":"/v1/items/report-1"}"#
        )
        #expect(failure.category == .invalid(reason: "422 Validation failed: The title field is required."))
        #expect(failure.problem?.type == "https://example.net/probs/validation")
        #expect(failure.problem?.instance == "/v1/items/report-1")
        #expect(failure.operatorText.title == "Upload rejected")
        #expect(
            failure.operatorText.message
                == "api.example.net rejected PUT /v1/items/report-1?x=1 with 422 Validation failed: The title field is required."
        )
    }

    @Test func withoutAProblemTheStatusTextIsTheReason() {
        let failure = Self.failure(404, [("Content-Type", "text/html")], body: "<h1>Not here</h1>", method: "GET")
        #expect(failure.category == .invalid(reason: "404 Not Found"))
        #expect(failure.problem == nil)
        #expect(failure.operatorText.title == "Resource not found")
    }

    @Test func aProblemWithAWronglyTypedMemberKeepsTheOthers() {
        let failure = Self.failure(409, [Self.problemJSON], body: #"{"status":"409","detail":"Version 3 exists."}"#)
        #expect(failure.problem?.status == nil)
        #expect(failure.category == .invalid(reason: "409 Conflict: Version 3 exists."))
        #expect(failure.operatorText.title == "Upload conflicts")
    }

    @Test(arguments: [400, 404, 409, 413, 410, 415])
    func clientErrorsAreInvalid(_ status: Int) {
        let failure = Self.failure(status)
        #expect(failure.category.kind == .invalid)
        #expect(failure.cause == "http\(status)")
        #expect(failure.status == status)
    }

    @Test func tooManyRequestsIsRateLimitedWithOrWithoutAHint() {
        let hinted = Self.failure(429, [("Retry-After", "30")])
        #expect(hinted.category == .rateLimited(retryAfter: .seconds(30)))
        #expect(hinted.operatorText.message.hasSuffix("with 429 Too Many Requests and asked to wait 30 s."))
        let unhinted = Self.failure(429)
        #expect(unhinted.category == .rateLimited(retryAfter: nil))
        #expect(unhinted.operatorText.message.hasSuffix("without saying how long to wait."))
    }

    @Test func unavailableIsRateLimitedOnlyWithAUsableHint() {
        #expect(Self.failure(503, [("Retry-After", "Wed, 21 Oct 2015 07:30:00 GMT")]).category == .rateLimited(retryAfter: .seconds(120)))
        #expect(Self.failure(503, [("Retry-After", "whenever")]).category == .transient)
        #expect(Self.failure(503).category == .transient)
    }

    @Test(arguments: [500, 502, 504, 599])
    func otherServerErrorsAreTransient(_ status: Int) {
        let failure = Self.failure(status, [("Retry-After", "5")])
        #expect(failure.category == .transient)
        #expect(failure.retryAfter == .seconds(5), "the hint is kept, for the logs")
    }

    @Test func aRedirectIsACaptivePortalNamingTheLocation() {
        let failure = Self.failure(302, [("Location", "http://portal.hotel.example/login?next=x")])
        #expect(failure.category == .unreachable)
        #expect(failure.cause == "captivePortal")
        #expect(failure.scope == "https://api.example.net:8443")
        #expect(failure.operatorText.message.contains("302 Found, redirecting to http://portal.hotel.example/login?next=x"))
        #expect(failure.operatorText.next?.contains("sign in") == true)
        #expect(Self.failure(307).operatorText.message.contains("redirecting without a Location"))
    }

    @Test func notModifiedIsNotAPortal() {
        #expect(Self.failure(304, method: "GET").category.kind == .invalid)
    }

    @Test func proxyAuthenticationIsUnreachable() {
        #expect(Self.failure(407).category == .unreachable)
    }

    @Test(arguments: [408, 425])
    func timeoutsAskedForByTheServerAreTransient(_ status: Int) {
        #expect(Self.failure(status).category == .transient)
    }

    @Test(arguments: [100, 200, 201, 204, 600])
    func unexpectedStatusesAreInvalid(_ status: Int) {
        let failure = Self.failure(status)
        #expect(failure.category.kind == .invalid)
        #expect(failure.operatorText.title == "Unexpected answer")
    }

    @Test func anOAuthErrorBodyExplainsATokenEndpointsRefusal() {
        let failure = Self.failure(
            400,
            [("Content-Type", "application/json;charset=UTF-8")],
            body: #"{"error":"unsupported_grant_type","error_description":"Only client_credentials is supported."}"#,
            method: "POST"
        )
        #expect(
            failure.category
                == .invalid(reason: "400 Bad Request: Only client_credentials is supported (unsupported_grant_type).")
        )
    }

    @Test func aPlainTextBodysFirstLineIsShown() {
        let failure = Self.failure(502, [("Content-Type", "text/plain")], body: "upstream timed out\nsecond line")
        #expect(failure.operatorText.message.hasSuffix("502 Bad Gateway: upstream timed out."))
    }

    @Test func undecodableNamesThePagesTitle() {
        let failure = HTTPFailure.undecodable(
            method: "GET", url: Self.url, contentType: "text/html",
            body: ByteBuffer(string: "<html><head><TITLE>\n  Hotel   Wi-Fi </TITLE></head></html>")
        )
        #expect(failure.cause == "undecodableResponse")
        #expect(failure.category == .invalid(reason: "answer is not JSON"))
        #expect(failure.operatorText.message.contains("an HTML page titled “Hotel Wi-Fi” instead of JSON"))
    }

    @Test func bodyTooLargeSaysBothSizes() {
        let failure = HTTPFailure.bodyTooLarge(method: "GET", url: Self.url, limit: 64 * 1024, announced: 5_000_000_000)
        #expect(failure.category == .invalid(reason: "answer larger than the 64 KiB limit"))
        #expect(failure.operatorText.message.contains("a body of 4.7 GiB, over the 64 KiB this request allows"))
    }

    /// No configuration key sets the limit of an answer's body (a receipt's, a token's, a
    /// resource's): the advice does not send an administrator looking for one.
    @Test func bodyTooLargeDoesNotSendAnAdministratorToTheConfiguration() throws {
        let failure = HTTPFailure.bodyTooLarge(method: "PUT", url: Self.url, status: 200, limit: 64 * 1024)
        let next = try #require(failure.operatorText.next)
        #expect(!next.contains("configuration"), "\(next)")
        #expect(next.contains("no setting raises it"), "\(next)")
    }
}
