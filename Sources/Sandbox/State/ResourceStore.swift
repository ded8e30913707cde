import Crypto
import NIOCore

/// The named resources, changeable through the admin API.
struct ResourceStore: Sendable {
    private(set) var resources: [String: StoredResource] = [:]

    init(seeds: [SandboxResource]) {
        for seed in seeds {
            set(name: seed.name, contentType: seed.contentType, content: ByteBuffer(bytes: seed.content))
        }
    }

    /// Sets (or creates) `name`; returns the stored resource with its new entity tag.
    @discardableResult
    mutating func set(name: String, contentType: String, content: ByteBuffer) -> StoredResource {
        let digest = content.withUnsafeReadableBytes { SHA256.hash(data: $0) }
        let resource = StoredResource(
            name: name,
            contentType: contentType,
            content: content,
            etag: "\"\(Hex.encode(digest.prefix(16)))\"",
            version: (resources[name]?.version ?? 0) + 1
        )
        resources[name] = resource
        return resource
    }

    subscript(name: String) -> StoredResource? {
        resources[name]
    }
}
