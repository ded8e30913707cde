import Foundation
import ErrorBusSupport
import GRDB

/// A job's key as the `job` table holds it: a key that is a lowercase hex SHA-256 (every key the
/// daemon makes) as its 32 bytes, a BLOB; any other key as its text.
///
/// The key is in the row and again in its unique index: as bytes it takes 64 bytes a job where
/// the hex took 128, a fifth of a queued job's state. Every statement that binds or reads `id`
/// goes through this type; in the store's binary order the bytes sort as their hex does.
struct StoredJobKey: DatabaseValueConvertible {
    /// The key as the rest of the daemon knows it.
    let id: String

    init(_ id: String) {
        self.id = id
    }

    var databaseValue: DatabaseValue {
        if let bytes = Self.digestBytes(id) { return Data(bytes).databaseValue }
        return id.databaseValue
    }

    static func fromDatabaseValue(_ value: DatabaseValue) -> StoredJobKey? {
        switch value.storage {
        case .blob(let bytes): StoredJobKey(LowercaseHex.string(bytes, count: bytes.count))
        case .string(let text): StoredJobKey(text)
        default: nil
        }
    }

    /// The 32 bytes of a key of 64 lowercase hex digits; `nil` for any other key.
    static func digestBytes(_ id: String) -> [UInt8]? {
        guard id.utf8.count == 64 else { return nil }
        var utf8 = id.utf8.makeIterator()
        var bytes = [UInt8]()
        bytes.reserveCapacity(32)
        while let high = utf8.next(), let low = utf8.next() {
            guard let high = nibble(high), let low = nibble(low) else { return nil }
            bytes.append(high << 4 | low)
        }
        return bytes
    }

    /// The binary range of the stored digests whose hex starts with `prefix` (hex digits, of
    /// either case: bytes have none): the prefix padded with zeros, up to the next prefix of its
    /// length padded so (`nil` when there is none: every digest from the start).
    static func digestRange(prefix: String) -> (start: Data, end: Data?)? {
        let prefix = prefix.lowercased()
        guard prefix.utf8.count <= 64, prefix.utf8.allSatisfy({ nibble($0) != nil }) else { return nil }
        func bytes(_ hex: [UInt8]) -> Data {
            let padded = hex + [UInt8](repeating: UInt8(ascii: "0"), count: hex.count % 2)
            return Data(stride(from: 0, to: padded.count, by: 2).map { nibble(padded[$0])! << 4 | nibble(padded[$0 + 1])! })
        }
        var next = Array(prefix.utf8)
        // The next prefix of the same length: the last digit below f raised by one, the f's
        // after it dropped.
        while let last = next.popLast() {
            guard last == UInt8(ascii: "f") else {
                next.append(last == UInt8(ascii: "9") ? UInt8(ascii: "a") : last + 1)
                break
            }
        }
        return (bytes(Array(prefix.utf8)), next.isEmpty ? nil : bytes(next))
    }

    private static func nibble(_ digit: UInt8) -> UInt8? {
        switch digit {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): digit - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): digit - UInt8(ascii: "a") + 10
        default: nil
        }
    }

}

extension String {
    /// This job key as the `job` table holds it (``StoredJobKey``).
    var storedJobKey: DatabaseValue { StoredJobKey(self).databaseValue }
}
