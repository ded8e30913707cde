import HTTPTypes

extension HTTPField.Name {
    /// `Idempotency-Key` (draft-ietf-httpapi-idempotency-key-header).
    static let idempotencyKey = HTTPField.Name("Idempotency-Key")!
    /// `Pragma` (RFC 9111 §5.4), which RFC 6749 §5.1 asks token responses to carry.
    static let pragma = HTTPField.Name("Pragma")!
}
