/// One challenge of a `WWW-Authenticate` header (RFC 9110 §11.6.1), e.g.
/// `Bearer realm="api", error="invalid_token", error_description="The access token expired"`.
///
/// Only what failure messages need: the scheme and the auth-params. A `token68` challenge
/// (`Negotiate abc==`) keeps its scheme and no parameters.
struct AuthenticationChallenge: Sendable, Hashable {
    /// The auth scheme, as sent (`Bearer`, `Basic`, …).
    var scheme: String
    /// The auth-params, names lowercased, quoted-string values unquoted.
    var parameters: [String: String]

    /// RFC 6750 §3 `error`, e.g. `invalid_token`.
    var error: String? { parameters["error"] }
    /// RFC 6750 §3 `error_description`, for a person.
    var errorDescription: String? { parameters["error_description"] }
    /// The protection space, e.g. `errorbus-sandbox`.
    var realm: String? { parameters["realm"] }

    /// Every challenge in the header values, in order; malformed parts are skipped.
    static func parse(_ values: [String]) -> [AuthenticationChallenge] {
        var challenges: [AuthenticationChallenge] = []
        for value in values {
            var scanner = Scanner(Array(value.utf8))
            while !scanner.isAtEnd {
                scanner.skip { $0 == UInt8(ascii: " ") || $0 == UInt8(ascii: "\t") || $0 == UInt8(ascii: ",") }
                guard let name = scanner.token() else {
                    scanner.skipPastComma()
                    continue
                }
                scanner.skipWhitespace()
                if scanner.peek == UInt8(ascii: "="), let challenge = challenges.popLast() {
                    // `name=value`: a parameter of the current challenge.
                    var challenge = challenge
                    scanner.advance()
                    scanner.skipWhitespace()
                    if let parameterValue = scanner.quotedString() ?? scanner.token() {
                        challenge.parameters[name.lowercased()] = parameterValue
                    }
                    challenges.append(challenge)
                    scanner.skipPastComma()
                } else {
                    // A new challenge; its first parameter (or token68) may follow on the same item.
                    challenges.append(AuthenticationChallenge(scheme: name, parameters: [:]))
                    scanner.skipWhitespace()
                    if let firstName = scanner.tokenFollowedByEquals() {
                        scanner.skipWhitespace()
                        if let parameterValue = scanner.quotedString() ?? scanner.token() {
                            challenges[challenges.count - 1].parameters[firstName.lowercased()] = parameterValue
                        }
                    }
                    scanner.skipPastComma()
                }
            }
        }
        return challenges
    }

    /// A minimal byte scanner for the header grammar.
    private struct Scanner {
        let bytes: [UInt8]
        var index = 0

        init(_ bytes: [UInt8]) { self.bytes = bytes }

        var isAtEnd: Bool { index >= bytes.count }
        var peek: UInt8? { isAtEnd ? nil : bytes[index] }

        mutating func advance() { index += 1 }

        mutating func skip(while predicate: (UInt8) -> Bool) {
            while let byte = peek, predicate(byte) { index += 1 }
        }

        mutating func skipWhitespace() {
            skip { $0 == UInt8(ascii: " ") || $0 == UInt8(ascii: "\t") }
        }

        /// Skips to just after the next comma outside a quoted string, or to the end.
        mutating func skipPastComma() {
            var quoted = false
            while let byte = peek {
                index += 1
                if byte == UInt8(ascii: "\\"), quoted {
                    index += 1
                } else if byte == UInt8(ascii: "\"") {
                    quoted.toggle()
                } else if byte == UInt8(ascii: ","), !quoted {
                    return
                }
            }
        }

        /// RFC 9110 `token`; also accepts token68's `=`-free characters `/` and `.`.
        mutating func token() -> String? {
            let start = index
            skip { Self.isTokenCharacter($0) }
            return index > start ? String(decoding: bytes[start..<index], as: UTF8.self) : nil
        }

        /// A token immediately followed (after optional whitespace) by `=`, consuming both; the
        /// scanner is left where it was when there is none (a token68, or nothing).
        mutating func tokenFollowedByEquals() -> String? {
            let start = index
            if let name = token() {
                skipWhitespace()
                if peek == UInt8(ascii: "="), index + 1 >= bytes.count || bytes[index + 1] != UInt8(ascii: "=") {
                    advance()
                    return name
                }
            }
            index = start
            return nil
        }

        /// A quoted-string, unescaped; `nil` (nothing consumed) when the next byte is not `"`.
        mutating func quotedString() -> String? {
            guard peek == UInt8(ascii: "\"") else { return nil }
            advance()
            var value: [UInt8] = []
            while let byte = peek {
                advance()
                if byte == UInt8(ascii: "\\"), let escaped = peek {
                    value.append(escaped)
                    advance()
                } else if byte == UInt8(ascii: "\"") {
                    break
                } else {
                    value.append(byte)
                }
            }
            return String(decoding: value, as: UTF8.self)
        }

        static func isTokenCharacter(_ byte: UInt8) -> Bool {
            switch byte {
            case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "0")...UInt8(ascii: "9"):
                true
            default:
                "!#$%&'*+-.^_`|~/".utf8.contains(byte)
            }
        }
    }
}
