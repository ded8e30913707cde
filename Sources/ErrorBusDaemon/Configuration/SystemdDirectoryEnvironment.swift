/// The directories systemd passes a service in its environment (`systemd.exec(5)`), as
/// configuration defaults.
struct SystemdDirectoryEnvironment: Sendable, Equatable {
    /// `$STATE_DIRECTORY`'s first path (`StateDirectory=` may list several, joined by `:`).
    var state: String?
    /// `$RUNTIME_DIRECTORY`'s first path.
    var runtime: String?
    /// `$CREDENTIALS_DIRECTORY`, where `LoadCredential=` puts credentials.
    var credentials: String?

    /// Reads the three variables from `environment`; unset or empty ones are `nil`, relative
    /// ones an error naming the variable.
    init(environment: [String: String]) throws(ConfigurationError) {
        state = try Self.firstPath(environment, "STATE_DIRECTORY")
        runtime = try Self.firstPath(environment, "RUNTIME_DIRECTORY")
        credentials = try Self.firstPath(environment, "CREDENTIALS_DIRECTORY")
    }

    private static func firstPath(_ environment: [String: String], _ name: String) throws(ConfigurationError) -> String? {
        guard let value = environment[name],
            let first = value.split(separator: ":", omittingEmptySubsequences: true).first.map(String.init)
        else {
            return nil
        }
        guard first.hasPrefix("/") else {
            throw ConfigurationError(environmentVariable: name, reason: "expected an absolute path, got \"\(value)\"")
        }
        return first.count > 1 && first.hasSuffix("/") ? String(first.dropLast()) : first
    }
}
