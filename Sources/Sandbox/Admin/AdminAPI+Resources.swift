import HTTPTypes
import Hummingbird
import Synchronization

extension AdminAPI {
    /// How the admin API shows a resource.
    struct ResourceReport: Codable, Sendable {
        var name: String
        var contentType: String
        var bytes: Int
        var etag: String
        var version: Int

        init(_ resource: StoredResource) {
            name = resource.name
            contentType = resource.contentType
            bytes = resource.content.readableBytes
            etag = resource.etag
            version = resource.version
        }
    }

    /// The answer to `GET /admin/resources`.
    struct ResourceList: Codable, Sendable {
        var resources: [ResourceReport]
    }

    /// `GET /admin/resources`.
    func listResources() -> Response {
        let resources = state.resources.withLock { Array($0.resources.values) }
        return Self.json(ResourceList(resources: resources.map(ResourceReport.init).sorted { $0.name < $1.name }))
    }

    /// `PUT /admin/resources/{name}`: the body becomes the resource's content (and its
    /// `Content-Type` the resource's, `application/octet-stream` if none), with a new `ETag`.
    func setResource(_ request: Request, context: BasicRequestContext) async throws -> Response {
        let name = try context.parameters.require("name")
        let content = try await request.body.collect(upTo: Self.maxBodyBytes)
        let contentType = request.headers[.contentType] ?? "application/octet-stream"
        let resource = state.resources.withLock { $0.set(name: name, contentType: contentType, content: content) }
        return Self.json(ResourceReport(resource))
    }
}
