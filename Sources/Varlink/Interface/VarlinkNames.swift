/// The syntax of names in Varlink's interface definition language.
enum VarlinkNames {
    /// `interface-name`: reverse-domain name, at least two labels, e.g. `org.example.notes`.
    static func isInterfaceName(_ name: String) -> Bool {
        let labels = name.split(separator: ".", omittingEmptySubsequences: false)
        guard labels.count >= 2 else { return false }
        for (index, label) in labels.enumerated() {
            let bytes = Array(label.utf8)
            guard let first = bytes.first, let last = bytes.last else { return false }
            if index == 0 {
                guard first.isASCIILetter else { return false }
            } else {
                guard first.isASCIILetter || first.isASCIIDigit else { return false }
            }
            guard last != UInt8(ascii: "-") else { return false }
            guard bytes.allSatisfy({ $0.isASCIILetter || $0.isASCIIDigit || $0 == UInt8(ascii: "-") }) else {
                return false
            }
        }
        return true
    }

    /// `member-name`: methods, errors and named types, e.g. `GetStatus`.
    static func isMemberName(_ name: String) -> Bool {
        let bytes = Array(name.utf8)
        guard let first = bytes.first, first >= UInt8(ascii: "A"), first <= UInt8(ascii: "Z") else { return false }
        return bytes.allSatisfy { $0.isASCIILetter || $0.isASCIIDigit }
    }

    /// `field-name`: struct fields and enum cases, e.g. `retry_after` or `retryAfter`.
    static func isIdentifier(_ name: String) -> Bool {
        let bytes = Array(name.utf8)
        guard let first = bytes.first, first.isASCIILetter, let last = bytes.last, last != UInt8(ascii: "_") else {
            return false
        }
        var previousWasUnderscore = false
        for byte in bytes {
            if byte == UInt8(ascii: "_") {
                if previousWasUnderscore { return false }
                previousWasUnderscore = true
            } else {
                guard byte.isASCIILetter || byte.isASCIIDigit else { return false }
                previousWasUnderscore = false
            }
        }
        return true
    }
}

extension UInt8 {
    fileprivate var isASCIILetter: Bool {
        (self >= UInt8(ascii: "a") && self <= UInt8(ascii: "z")) || (self >= UInt8(ascii: "A") && self <= UInt8(ascii: "Z"))
    }

    fileprivate var isASCIIDigit: Bool {
        self >= UInt8(ascii: "0") && self <= UInt8(ascii: "9")
    }
}
