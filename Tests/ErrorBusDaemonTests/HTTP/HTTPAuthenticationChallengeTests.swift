@testable import ErrorBusHTTP
import Testing

import ErrorBusDaemon

/// `WWW-Authenticate` parsing (RFC 9110 §11.6.1, RFC 6750 §3).
@Suite(.timeLimit(.minutes(1)))
struct HTTPAuthenticationChallengeTests {
    @Test func aBearerChallengeWithQuotedParameters() {
        let challenges = AuthenticationChallenge.parse([
            #"Bearer realm="errorbus-sandbox", error="invalid_token", error_description="Token \"abc\" expired, sign in again""#
        ])
        #expect(challenges.count == 1)
        #expect(challenges.first?.scheme == "Bearer")
        #expect(challenges.first?.realm == "errorbus-sandbox")
        #expect(challenges.first?.error == "invalid_token")
        #expect(challenges.first?.errorDescription == #"Token "abc" expired, sign in again"#)
    }

    @Test func severalChallengesInOneValueAndAcrossValues() {
        let challenges = AuthenticationChallenge.parse([
            #"Newauth realm="apps", type=1, title="Login to \"apps\"", Basic realm="simple""#,
            "Negotiate abc==",
        ])
        #expect(challenges.map(\.scheme) == ["Newauth", "Basic", "Negotiate"])
        #expect(challenges[0].parameters == ["realm": "apps", "type": "1", "title": #"Login to "apps""#])
        #expect(challenges[1].realm == "simple")
        #expect(challenges[2].parameters.isEmpty)
    }

    @Test func malformedInputGivesWhatItCan() {
        #expect(AuthenticationChallenge.parse(["", " , ,"]).isEmpty)
        #expect(AuthenticationChallenge.parse([#"Bearer error="unterminated"#]).first?.error == "unterminated")
    }
}
