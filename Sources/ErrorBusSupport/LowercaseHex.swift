/// Bytes as lowercase hex, written in place: a string per byte, joined, cost as much as the hash
/// of a 4 KiB file. What a job's key is made of (a SHA-256) and read back as (its stored bytes).
package enum LowercaseHex {
    /// The hex of `bytes`, of which there are `count`.
    package static func string(_ bytes: some Sequence<UInt8>, count: Int) -> String {
        let digits = Array("0123456789abcdef".utf8)
        return String(unsafeUninitializedCapacity: 2 * count) { text in
            for (index, byte) in bytes.enumerated() {
                text[2 * index] = digits[Int(byte >> 4)]
                text[2 * index + 1] = digits[Int(byte & 0x0F)]
            }
            return 2 * count
        }
    }
}
