/// A configuration errorbusd cannot run with: which file, which key, and why.
///
/// Its ``description`` is the one line to print before exiting with ``exitCode``, in the
/// `file:line: key: reason` shape compilers and linters use:
///
///     /etc/errorbusd/errorbusd.yaml:14: sync.concurrency: expected an integer between 1 and 1024, got "sixteen"
///     environment variable ERRORBUSD_SYNC_CONCURRENCY (sync.concurrency): expected an integer between 1 and 1024, got "0"
///     auth.client-secret-file: cannot read /etc/errorbusd/secret: No such file or directory
package struct ConfigurationError: Error, Sendable, CustomStringConvertible {
    /// The configuration file the problem is in, if it is in one.
    package var file: String?
    /// The 1-based line in ``file``, when the YAML parser or the key's position tells it.
    package var line: Int?
    /// The key, dot-separated as the YAML nests it (`sync.concurrency`), if one is at fault.
    package var key: String?
    /// The environment variable the bad value came from, when it came from one
    /// (`ERRORBUSD_SYNC_CONCURRENCY`); then ``file`` is `nil`.
    package var environmentVariable: String?
    /// What is wrong, in words an administrator can act on.
    package var reason: String

    /// The exit status for a bad configuration: `EX_CONFIG` from `sysexits.h`.
    package static let exitCode: Int32 = 78

    /// Creates the error.
    package init(file: String? = nil, line: Int? = nil, key: String? = nil, environmentVariable: String? = nil, reason: String) {
        self.file = file
        self.line = line
        self.key = key
        self.environmentVariable = environmentVariable
        self.reason = reason
    }

    package var description: String {
        var parts: [String] = []
        if let environmentVariable {
            parts.append(key.map { "environment variable \(environmentVariable) (\($0))" } ?? "environment variable \(environmentVariable)")
        } else {
            if let file {
                parts.append(line.map { "\(file):\($0)" } ?? file)
            }
            if let key {
                parts.append(key)
            }
        }
        parts.append(reason)
        return Self.oneLine(parts.joined(separator: ": "))
    }

    /// Line breaks and other control characters (from a quoted value, a YAML block scalar, an
    /// environment variable) written as escapes, so that the error stays one line.
    static func oneLine(_ text: String) -> String {
        guard text.unicodeScalars.contains(where: { $0.properties.generalCategory == .control && $0 != "\t" }) else { return text }
        var result = ""
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\n": result += "\\n"
            case "\r": result += "\\r"
            case "\t": result.unicodeScalars.append(scalar)
            case _ where scalar.properties.generalCategory == .control:
                result += "\\u{" + String(scalar.value, radix: 16) + "}"
            default: result.unicodeScalars.append(scalar)
            }
        }
        return result
    }
}
