import NIOCore

/// A named resource as `GET /v1/resources/{name}` serves it.
struct StoredResource: Sendable {
    var name: String
    var contentType: String
    var content: ByteBuffer
    /// Strong entity tag (quoted): derived from the content, so equal content has an equal tag.
    var etag: String
    /// Bumped each time the content is set.
    var version: Int
}
