import Testing

@testable import Sandbox

struct EncodingTests {
    @Test(arguments: [
        (Int64(0), "Thu, 01 Jan 1970 00:00:00 GMT"),
        (784_111_777, "Sun, 06 Nov 1994 08:49:37 GMT"),
        (951_782_400, "Tue, 29 Feb 2000 00:00:00 GMT"),
        (4_102_444_799, "Thu, 31 Dec 2099 23:59:59 GMT"),
    ])
    func httpDateIsIMFFixdate(seconds: Int64, expected: String) {
        #expect(HTTPDate.format(unixSeconds: seconds) == expected)
    }

    @Test func formDecodingFollowsURLEncodedRules() throws {
        let fields = try FormURLEncoding.decode(Array("grant_type=client_credentials&client_id=a%2Bb+c&empty=&=skipped".utf8))
        #expect(fields == ["grant_type": "client_credentials", "client_id": "a+b c", "empty": ""])
        #expect(throws: FormURLEncoding.Failure.repeated("a")) { try FormURLEncoding.decode(Array("a=1&a=2".utf8)) }
        #expect(throws: FormURLEncoding.Failure.malformed) { try FormURLEncoding.decode(Array("a=%zz".utf8)) }
        #expect(throws: FormURLEncoding.Failure.malformed) { try FormURLEncoding.decode(Array("a=%ff".utf8)) }
    }

    @Test func jsonQuotingEscapesControlCharacters() {
        #expect(JSONText.quote("a\"b\\c\n\u{1}é") == #""a\"b\\c\n\u0001é""#)
    }
}
