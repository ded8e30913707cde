import Hummingbird
import Synchronization

extension AdminAPI {
    /// The answer to `GET /admin/items`.
    struct ItemList: Codable, Sendable {
        var items: [StoredItem]
    }

    /// `GET /admin/items`: every stored item (latest version), by id.
    func listItems() -> Response {
        let items = state.items.withLock { Array($0.items.values) }
        return Self.json(ItemList(items: items.sorted { $0.id < $1.id }))
    }

    /// `GET /admin/items/{id}`.
    func item(_ context: BasicRequestContext) throws -> Response {
        let id = try context.parameters.require("id")
        guard let item = state.items.withLock({ $0.items[id] }) else {
            throw ProblemDetails.notFound("No item \(id) is stored.")
        }
        return Self.json(item)
    }
}
