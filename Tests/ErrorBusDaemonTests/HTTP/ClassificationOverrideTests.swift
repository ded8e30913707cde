import ErrorBus
import ErrorBusHTTP
import Testing

/// `api.classify`: an administrator's word on what an API means by an answer goes before HTTP's.
@Suite struct ClassificationOverrideTests {
    static func failure(_ status: Int, type: String? = nil) -> HTTPFailure {
        HTTPFailure(
            category: .invalid(reason: "HTTP \(status)"),
            cause: "http\(status)",
            method: "PUT",
            url: "http://api.example.com/v1/items/1",
            text: OperatorText(title: "Rejected", message: "The API refused it."),
            status: status,
            problem: type.map { ProblemDetails(type: $0, status: status) }
        )
    }

    static let rules = [
        ClassificationOverride(status: 403, category: .permanent),
        ClassificationOverride(status: 403, problemType: "urn:disk-full", category: .transient),
        ClassificationOverride(status: 500, category: .permanent),
    ]

    @Test func aRuleWithTheProblemTypeGoesBeforeOneWithout() {
        let diskFull = Self.failure(403, type: "urn:disk-full").overridden(by: Self.rules)
        #expect(diskFull.category == .transient)
        #expect(diskFull.cause == "override403")
        #expect(diskFull.operatorText.message.hasSuffix("Classified transient by api.classify (403 urn:disk-full=transient)."))
        let other = Self.failure(403, type: "urn:forbidden").overridden(by: Self.rules)
        #expect(other.category.kind == .invalid)
        #expect(other.cause == "override403")
    }

    @Test func anAnswerNoRuleMatchesKeepsItsClassification() {
        let conflict = Self.failure(409).overridden(by: Self.rules)
        #expect(conflict.category == .invalid(reason: "HTTP 409") && conflict.cause == "http409")
        #expect(conflict.operatorText.message == "The API refused it.")
        let permanent = Self.failure(500).overridden(by: Self.rules)
        #expect(permanent.category == .invalid(reason: "HTTP 500 is permanent for this API (api.classify)"))
    }

    @Test func rulesParseAndPrintAsWritten() throws {
        for text in ["422=permanent", "403 urn:x=rate-limited", "503=unreachable", "401=unauthenticated"] {
            let rule = try ClassificationOverride.parse(text).get()
            #expect(rule.description == text)
        }
        #expect(try ClassificationOverride.parse("  404   =  Transient ").get() == ClassificationOverride(status: 404, category: .transient))
    }
}
