import ErrorBusDaemon
import ErrorBusHTTP
import Foundation
import Testing

/// `Retry-After` in both of its forms (RFC 9110 §10.2.3).
@Suite(.timeLimit(.minutes(1)))
struct HTTPRetryAfterTests {
    /// 2015-10-21T07:28:00Z, a Wednesday.
    static let now = Date(timeIntervalSince1970: 1_445_412_480)

    @Test(arguments: [
        ("0", Duration.zero),
        ("120", .seconds(120)),
        ("  7 ", .seconds(7)),
        ("007", .seconds(7)),
        ("99999999999999999999999", .seconds(RetryAfter.maximumSeconds)),
        ("3000000000", .seconds(RetryAfter.maximumSeconds)),
    ])
    func deltaSeconds(_ value: String, _ expected: Duration) {
        #expect(RetryAfter.parse(value, now: Self.now) == expected)
    }

    @Test(arguments: [
        // IMF-fixdate
        ("Wed, 21 Oct 2015 07:30:00 GMT", Duration.seconds(120)),
        ("Wed, 21 Oct 2015 07:28:01 GMT", .seconds(1)),
        ("Thu, 22 Oct 2015 07:28:00 GMT", .seconds(86_400)),
        ("Thu, 31 Dec 2015 23:59:60 GMT", .seconds(6_193_920)),  // a leap second is the next minute
        // obsolete RFC 850 and asctime forms, which recipients must accept
        ("Wednesday, 21-Oct-15 07:30:00 GMT", .seconds(120)),
        ("Wed Oct 21 07:30:00 2015", .seconds(120)),
        ("Wed Oct  21 07:30:00 2015", .seconds(120)),
        ("Sun Nov  6 08:49:37 1994", .zero),
    ])
    func httpDates(_ value: String, _ expected: Duration) {
        #expect(RetryAfter.parse(value, now: Self.now) == expected)
    }

    @Test(arguments: [
        "Wed, 21 Oct 2015 07:27:59 GMT",
        "Sun, 06 Nov 1994 08:49:37 GMT",
        "Sunday, 06-Nov-94 08:49:37 GMT",
    ])
    func pastDatesMeanNoWait(_ value: String) {
        #expect(RetryAfter.parse(value, now: Self.now) == .zero)
    }

    @Test(arguments: [
        "",
        "   ",
        "-5",
        "+5",
        "1.5",
        "5 s",
        "soon",
        "0x10",
        "Wed, 21 Oct 2015 07:30:00",  // no zone
        "Wed, 21 Oct 2015 07:30:00 UTC",  // only GMT is allowed
        "Wed, 21 Foo 2015 07:30:00 GMT",  // no such month
        "Wed, 31 Feb 2015 07:30:00 GMT",  // no such day
        "Wed, 21 Oct 2015 24:00:00 GMT",  // no such hour
        "Wed, 21 Oct 15 07:30:00 GMT",  // a two-digit year in IMF-fixdate
        "Wed, 1 Oct 2015 07:30:00 GMT",  // a one-digit day in IMF-fixdate
        "Xyz, 21 Oct 2015 07:30:00 GMT",  // no such day name
        "Wed, 21 Oct 2015 7:30:00 GMT",  // a one-digit hour
    ])
    func garbageIsNoHint(_ value: String) {
        #expect(RetryAfter.parse(value, now: Self.now) == nil)
    }

    @Test func aTwoDigitYearMoreThanFiftyYearsAheadIsInThePastCentury() {
        // RFC 9110 §5.6.7: "15" in 2015 is 2015; "94" is 1994, not 2094.
        #expect(RetryAfter.parse("Sunday, 21-Oct-94 07:30:00 GMT", now: Self.now) == .zero)
        let late = Date(timeIntervalSince1970: 4_102_444_800)  // 2100-01-01
        #expect(RetryAfter.parse("Friday, 01-Jan-00 00:00:10 GMT", now: late) == .seconds(10))
    }

    @Test func aFractionOfASecondAheadRoundsUp() {
        let now = Self.now.addingTimeInterval(-0.25)
        #expect(RetryAfter.parse("Wed, 21 Oct 2015 07:28:00 GMT", now: now) == .milliseconds(250))
    }
}
