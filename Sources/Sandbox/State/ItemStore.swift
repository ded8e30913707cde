/// Uploaded items by id, and the idempotency keys already seen.
struct ItemStore: Sendable {
    /// What a `PUT` did.
    enum PutOutcome: Equatable {
        /// A new idempotency key: stored (`isNewItem`: the id had never been stored before).
        case stored(StoredItem, isNewItem: Bool)
        /// The key was already used for this id and body: absorbed, nothing changed.
        case duplicate(StoredItem)
        /// The key was already used for another id or another body.
        case keyReused(firstItemID: String)
    }

    private struct KeyUse: Sendable {
        let item: StoredItem
    }

    /// The latest version of every item.
    private(set) var items: [String: StoredItem] = [:]
    private var keys: [String: KeyUse] = [:]
    /// Uploads stored under a new idempotency key.
    private(set) var uploadsStored = 0
    /// Uploads answered 200 because their key had been seen with the same item.
    private(set) var duplicatesAbsorbed = 0
    /// Uploads rejected because their key had been used for something else.
    private(set) var keysReused = 0
    /// Bytes held: the sum of the latest version of every item.
    private(set) var bytesStored = 0

    /// Stores an upload of `id` under `key`, unless the key was seen before.
    mutating func put(id: String, key: String, bytes: Int, sha256: String, now: Duration) -> PutOutcome {
        if let use = keys[key] {
            guard use.item.id == id, use.item.sha256 == sha256, use.item.bytes == bytes else {
                keysReused += 1
                return .keyReused(firstItemID: use.item.id)
            }
            duplicatesAbsorbed += 1
            return .duplicate(use.item)
        }
        let previous = items[id]
        let item = StoredItem(
            id: id,
            bytes: bytes,
            sha256: sha256,
            idempotencyKey: key,
            versions: (previous?.versions ?? 0) + 1,
            storedAtMs: now.milliseconds
        )
        items[id] = item
        keys[key] = KeyUse(item: item)
        uploadsStored += 1
        bytesStored += bytes - (previous?.bytes ?? 0)
        return .stored(item, isNewItem: previous == nil)
    }

    /// Forgets every item, key and count.
    mutating func removeAll() {
        self = ItemStore()
    }
}
