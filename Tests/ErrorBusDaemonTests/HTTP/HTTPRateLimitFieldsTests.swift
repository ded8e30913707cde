import ErrorBus
import ErrorBusHTTP
import Foundation
import InMemoryLogging
import Logging
import NIOHTTP1
import Testing

/// The rate-limit fields an API answers with: the IETF draft's `RateLimit`/`RateLimit-Policy`
/// (RFC 8941 structured fields), its earlier forms, and the common `X-RateLimit-*`.
@Suite(.timeLimit(.minutes(1)))
struct HTTPRateLimitFieldsTests {
    static let now = Date(timeIntervalSince1970: 1_700_000_000)

    private func fields(_ pairs: [(String, String)], logs: InMemoryLogHandler? = nil) -> RateLimitFields? {
        var logger = logs.map { handler in Logger(label: "test") { _ in handler } }
        logger?.logLevel = .debug
        return RateLimitFields(headers: HTTPHeaders(pairs), now: Self.now, logger: logger)
    }

    @Test func theDraftsListAndPolicy() {
        let parsed = fields([("RateLimit", #""default";r=0;t=30"#), ("RateLimit-Policy", #""default";q=100;w=60"#)])
        #expect(parsed == RateLimitFields(remaining: 0, reset: .seconds(30), quota: 100, window: .seconds(60)))
        #expect(parsed?.pause == .seconds(30))
        // Several policies: the one with the fewest requests left decides.
        let two = fields([("RateLimit", #""burst";r=5;t=1, "daily";r=0;t=3600"#)])
        #expect(two?.remaining == 0 && two?.reset == .seconds(3600))
        // Requests left: no pause.
        #expect(fields([("RateLimit", #""default";r=10;t=30"#)])?.pause == nil)
    }

    @Test func theDraftsEarlierForms() {
        #expect(fields([("RateLimit", "limit=100, remaining=0, reset=12")]) == RateLimitFields(remaining: 0, reset: .seconds(12), quota: 100))
        #expect(fields([("RateLimit-Limit", "10"), ("RateLimit-Remaining", "0"), ("RateLimit-Reset", "7")])?.pause == .seconds(7))
    }

    @Test func theCommonXRateLimitFieldsInSecondsOrUnixTime() {
        #expect(fields([("X-RateLimit-Remaining", "0"), ("X-RateLimit-Reset", "42")])?.pause == .seconds(42))
        // GitHub's: a Unix time, 90 s from now.
        #expect(fields([("X-RateLimit-Remaining", "0"), ("X-RateLimit-Reset", "1700000090")])?.pause == .seconds(90))
    }

    @Test(arguments: [
        [("RateLimit", "this is not a structured field")],
        [("RateLimit", #""default";r=-1;t=30"#)],
        [("RateLimit", #""default";r="zero";t=30"#)],
        [("X-RateLimit-Remaining", "none"), ("X-RateLimit-Reset", "soon")],
        [("RateLimit-Policy", "q=100")],
    ])
    func badValuesAreIgnoredWithADebugLine(_ pairs: [(String, String)]) {
        let logs = InMemoryLogHandler()
        #expect(fields(pairs, logs: logs)?.pause == nil)
        #expect(logs.entries.contains { $0.level == .debug && $0.message.description.hasPrefix("ignoring ") }, "\(logs.entries)")
    }

    @Test func aTooManyRequestsWithoutRetryAfterWaitsForTheRateLimitsReset() {
        let failure = HTTPFailure(
            status: 429,
            headers: HTTPHeaders([("RateLimit", #""default";r=0;t=25"#)]),
            body: nil,
            method: "PUT",
            url: "https://api.example.net/v1/items/1",
            now: Self.now
        )
        #expect(failure.category == .rateLimited(retryAfter: .seconds(25)))
        // Retry-After wins when both are there.
        let both = HTTPFailure(
            status: 503,
            headers: HTTPHeaders([("Retry-After", "5"), ("RateLimit", #""default";r=0;t=25"#)]),
            body: nil,
            method: "PUT",
            url: "https://api.example.net/v1/items/1",
            now: Self.now
        )
        #expect(both.category == .rateLimited(retryAfter: .seconds(5)))
    }
}
