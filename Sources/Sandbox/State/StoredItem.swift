/// What the sandbox keeps of an uploaded item: enough to check that what arrived is what was sent.
struct StoredItem: Sendable, Codable, Equatable {
    /// The `{id}` of `PUT /v1/items/{id}`.
    var id: String
    /// The body's length in bytes.
    var bytes: Int
    /// SHA-256 of the body, lower-case hex.
    var sha256: String
    /// The `Idempotency-Key` it was stored under.
    var idempotencyKey: String
    /// How many distinct uploads (idempotency keys) this id has received.
    var versions: Int
    /// When the current version was stored, in sandbox milliseconds.
    var storedAtMs: Double
}
