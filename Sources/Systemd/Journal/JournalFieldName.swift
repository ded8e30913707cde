/// Turns swift-log metadata keys into journal field names, deterministically.
///
/// journald keeps only fields whose names are 1…64 characters of `A-Z`, `0-9` and `_`, not
/// starting with a digit or `_` (a leading `_` marks the fields journald itself vouches for, such
/// as `_PID`). It silently drops anything else. The rules, applied in order:
///
/// 1. A key that already is a valid name is kept as it is, so callers can pass explicit journal
///    fields such as `MESSAGE_ID` or `ERRORBUS_INCIDENT` through metadata.
/// 2. Any other key is mangled: ASCII letters are upper-cased, digits kept, every run of other
///    bytes (`.`, `-`, spaces, non-ASCII) becomes one `_`; leading and trailing runs are dropped.
///    `request.id` → `REQUEST_ID`, `_private` → `PRIVATE`. A key with nothing left becomes `FIELD`.
/// 3. A name starting with a digit, or equal to a field the handler writes itself
///    (``protectedNames``), gets the prefix `F_`: `2fa` → `F_2FA`, `message` → `F_MESSAGE`.
/// 4. The result is cut to 64 characters.
enum JournalFieldName {
    /// The fields ``JournalLogHandler`` writes itself; metadata cannot replace them.
    static let protectedNames: [[UInt8]] = [
        "MESSAGE", "PRIORITY", "CODE_FILE", "CODE_LINE", "CODE_FUNC", "SYSLOG_IDENTIFIER",
        JournalLogHandler.labelField,
    ].map { Array($0.utf8) }

    static let maximumLength = 64

    /// The journal field name for `key`.
    static func name(forMetadataKey key: String) -> String {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(min(key.utf8.count + 2, maximumLength))
        self.append(key, to: &bytes)
        return String(decoding: bytes, as: UTF8.self)
    }

    /// Appends the journal field name for `key` to `bytes`, without allocating for keys that are
    /// already valid and unprotected.
    static func append(_ key: String, to bytes: inout [UInt8]) {
        let start = bytes.count
        if self.isValid(key.utf8) {
            bytes.append(contentsOf: key.utf8)
        } else {
            var pendingSeparator = false
            for byte in key.utf8 {
                let mapped: UInt8
                switch byte {
                case UInt8(ascii: "a")...UInt8(ascii: "z"): mapped = byte - 32
                case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "0")...UInt8(ascii: "9"): mapped = byte
                default:
                    pendingSeparator = bytes.count > start
                    continue
                }
                if pendingSeparator {
                    bytes.append(UInt8(ascii: "_"))
                    pendingSeparator = false
                }
                bytes.append(mapped)
                if bytes.count - start > maximumLength { break }
            }
            if bytes.count == start {
                bytes.append(contentsOf: "FIELD".utf8)
            }
        }

        let name = bytes[start...]
        let startsWithDigit = (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(name.first!)
        if startsWithDigit || self.protectedNames.contains(where: { $0.elementsEqual(name) }) {
            bytes.insert(contentsOf: "F_".utf8, at: start)
        }
        if bytes.count - start > maximumLength {
            bytes.removeSubrange((start + maximumLength)...)
        }
    }

    /// Whether `name` is a field name journald accepts from a client as it is.
    static func isValid(_ name: String.UTF8View) -> Bool {
        guard let first = name.first, name.count <= maximumLength else { return false }
        guard (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains(first) else { return false }
        return name.allSatisfy { byte in
            (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains(byte)
                || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte)
                || byte == UInt8(ascii: "_")
        }
    }
}
