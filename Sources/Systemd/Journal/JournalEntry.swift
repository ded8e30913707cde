import Logging

internal import CSystemd
import Glibc

/// The fields of one journal entry, in one buffer, ready for `sd_journal_sendv`.
///
/// Every field is stored as a 4-byte length followed by `NAME=value`; ``withFields(_:)`` turns
/// them into an iovec array on the stack. One heap allocation per entry (the buffer), whatever
/// the number of fields. Values may contain newlines and any bytes: libsystemd switches to the
/// protocol's length-prefixed form for those.
struct JournalEntry {
    private(set) var bytes: [UInt8]
    private(set) var fieldCount = 0
    private var fieldStart = 0

    init(capacity: Int) {
        self.bytes = []
        self.bytes.reserveCapacity(capacity)
    }

    /// Starts a field; the caller appends `NAME=value` to ``bytes`` then calls ``endField()``.
    private mutating func beginField() {
        self.fieldStart = self.bytes.count
        self.bytes.append(contentsOf: [0, 0, 0, 0] as [UInt8])
    }

    private mutating func endField() {
        let length = UInt32(self.bytes.count - self.fieldStart - 4)
        withUnsafeBytes(of: length.littleEndian) { lengthBytes in
            self.bytes.withUnsafeMutableBytes { buffer in
                buffer.baseAddress!.advanced(by: self.fieldStart).copyMemory(
                    from: lengthBytes.baseAddress!,
                    byteCount: 4
                )
            }
        }
        self.fieldCount += 1
    }

    /// Appends `prefix` (`NAME=`, spelled by the caller) followed by `value`.
    mutating func append(_ prefix: StaticString, _ value: some StringProtocol) {
        self.beginField()
        self.bytes.append(contentsOf: UnsafeRawBufferPointer(start: prefix.utf8Start, count: prefix.utf8CodeUnitCount))
        self.bytes.append(contentsOf: value.utf8)
        self.endField()
    }

    /// Appends a field rendered earlier by ``render(key:value:)``.
    mutating func append(rendered field: [UInt8]) {
        self.beginField()
        self.bytes.append(contentsOf: field)
        self.endField()
    }

    /// Appends a metadata entry under its journal field name.
    mutating func append(metadataKey key: String, value: Logger.MetadataValue) {
        self.beginField()
        Self.appendBody(key: key, value: value, to: &self.bytes)
        self.endField()
    }

    /// A metadata entry as `NAME=value` bytes, for handler metadata that is rendered once and
    /// sent with every entry.
    static func render(key: String, value: Logger.MetadataValue) -> [UInt8] {
        var bytes: [UInt8] = []
        self.appendBody(key: key, value: value, to: &bytes)
        return bytes
    }

    private static func appendBody(key: String, value: Logger.MetadataValue, to bytes: inout [UInt8]) {
        JournalFieldName.append(key, to: &bytes)
        bytes.append(UInt8(ascii: "="))
        switch value {
        case .string(let string):
            bytes.append(contentsOf: string.utf8)
        case .stringConvertible(let convertible):
            bytes.append(contentsOf: convertible.description.utf8)
        case .array, .dictionary:
            bytes.append(contentsOf: value.description.utf8)
        }
    }

    /// Calls `body` with one iovec per field, pointing into ``bytes``.
    func withFields<Result>(_ body: (UnsafeBufferPointer<iovec>) -> Result) -> Result {
        self.bytes.withUnsafeBytes { buffer in
            withUnsafeTemporaryAllocation(of: iovec.self, capacity: self.fieldCount) { fields in
                var offset = 0
                for index in 0..<self.fieldCount {
                    var length: UInt32 = 0
                    withUnsafeMutableBytes(of: &length) {
                        $0.copyMemory(from: UnsafeRawBufferPointer(rebasing: buffer[offset..<(offset + 4)]))
                    }
                    let fieldLength = Int(UInt32(littleEndian: length))
                    fields.initializeElement(
                        at: index,
                        to: iovec(
                            iov_base: UnsafeMutableRawPointer(mutating: buffer.baseAddress! + offset + 4),
                            iov_len: fieldLength
                        )
                    )
                    offset += 4 + fieldLength
                }
                defer { fields.baseAddress!.deinitialize(count: self.fieldCount) }
                return body(UnsafeBufferPointer(fields))
            }
        }
    }
}
