import ErrorBus
import Testing

@Suite struct ErrorCategoryTests {
    @Test func kindDropsAssociatedValues() {
        #expect(ErrorCategory.rateLimited(retryAfter: .seconds(7)).kind == .rateLimited)
        #expect(ErrorCategory.rateLimited(retryAfter: nil).kind == .rateLimited)
        #expect(ErrorCategory.invalid(reason: "too large").kind == .invalid)
    }
}
