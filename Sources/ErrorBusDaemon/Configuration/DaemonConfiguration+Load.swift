import Configuration

extension DaemonConfiguration {
    /// The configuration file errorbusd reads unless told otherwise.
    package static let defaultFile = "/etc/errorbusd/errorbusd.yaml"

    /// Loads errorbusd's configuration: the built-in defaults, overridden by the YAML `file`, then
    /// by each `*.yaml` in the directory `file.d` beside it in name order, then by `ERRORBUSD_*`
    /// variables in `environment`; then reads the client secret.
    ///
    /// Keys are kebab-case and nested by section in YAML (`sync:` / `max-file-size: 10MiB`). Each
    /// key's environment variable is `ERRORBUSD_` and the key upper-cased with `_` for `.` and
    /// `-`, as swift-configuration's `EnvironmentVariablesProvider` maps keys:
    /// `api.base-url` is `ERRORBUSD_API_BASE_URL`, `sync.max-file-size` is
    /// `ERRORBUSD_SYNC_MAX_FILE_SIZE`. A list is comma-separated there. A later file's key wins
    /// over an earlier one's; a list replaces a list.
    ///
    /// Everything that is wrong is a ``ConfigurationError`` naming the file and line, or the
    /// variable, the key and the reason: a file that cannot be read, YAML that does not parse,
    /// unknown keys (with the nearest known one), unknown `ERRORBUSD_*` variables, values of the
    /// wrong type or out of range, relative paths, a missing or unreadable secret.
    ///
    /// - Parameters:
    ///   - file: The YAML file; `nil` for defaults and environment only. A file that is given
    ///     must exist; its drop-in directory need not.
    ///   - environment: The process environment (`ProcessInfo.processInfo.environment`):
    ///     `ERRORBUSD_*` overrides, and systemd's `STATE_DIRECTORY`, `RUNTIME_DIRECTORY` and
    ///     `CREDENTIALS_DIRECTORY`. Nothing else in it is read.
    ///   - credentialSource: For `--check-config` outside the service: where the installed unit
    ///     loads the client secret credential from, read when `$CREDENTIALS_DIRECTORY` is not set.
    package static func load(file: String?, environment: [String: String], credentialSource: String? = nil) throws(ConfigurationError) -> DaemonConfiguration {
        try loadWithSources(file: file, environment: environment, credentialSource: credentialSource).configuration
    }

    /// ``load(file:environment:credentialSource:)``, and where each value came from.
    package static func loadWithSources(
        file: String?,
        environment: [String: String],
        credentialSource: String? = nil
    ) throws(ConfigurationError) -> (configuration: DaemonConfiguration, sources: ConfigurationSources) {
        try checkEnvironment(environment)
        var sources = ConfigurationSources(environment: environment)
        if let file {
            for path in [file] + (try dropIns(of: file)) {
                sources.files.append((path, try ConfigurationFileOutline(parsing: try readFile(path), file: path)))
            }
        }
        // The first provider that has a key wins: the environment, then the files, last first.
        let providers: [any ConfigProvider] = [sources.environmentProvider] + sources.files.reversed().map { $0.outline.provider(file: $0.file) }
        do {
            let configuration = try DaemonConfiguration(reader: ConfigReader(providers: providers), environment: environment, credentialSource: credentialSource)
            return (configuration, sources)
        } catch {
            throw sources.attribute(error)
        }
    }

    /// The drop-ins of `file`: `file.d/*.yaml`, by name.
    static func dropIns(of file: String) throws(ConfigurationError) -> [String] {
        let directory = file + ".d"
        do {
            return try ConfigurationFile.yamlFiles(in: directory) ?? []
        } catch {
            throw ConfigurationError(file: directory, reason: "cannot read: \(error)")
        }
    }

    /// The contents of a configuration file, as text.
    private static func readFile(_ file: String) throws(ConfigurationError) -> String {
        let bytes: [UInt8]
        do {
            bytes = try ConfigurationFile.read(file, limit: 1 << 20)
        } catch {
            throw ConfigurationError(file: file, reason: "cannot read: \(error)")
        }
        guard let text = String(validating: bytes, as: UTF8.self) else {
            throw ConfigurationError(file: file, reason: "not UTF-8 text")
        }
        return text
    }

    /// Refuses `ERRORBUSD_*` variables that are not configuration keys, so a typo in a unit's
    /// `Environment=` line is an error rather than a setting silently not applied.
    private static func checkEnvironment(_ environment: [String: String]) throws(ConfigurationError) {
        let prefix = ConfigurationKeys.environmentPrefix.uppercased() + "_"
        for name in environment.keys.filter({ $0.hasPrefix(prefix) }).sorted() where ConfigurationKeys.variables[name] == nil {
            if let refusal = ConfigurationKeys.refused.first(where: { ConfigurationKeys.environmentVariable(for: $0.key) == name }) {
                throw ConfigurationError(key: refusal.key, environmentVariable: name, reason: refusal.value)
            }
            var reason = "not a configuration variable"
            if let nearest = ConfigurationKeys.suggestion(forVariable: name) {
                reason += "; did you mean \(nearest)?"
            } else {
                reason += "; the variables are \(prefix) and a key upper-cased, with _ for . and - (\(prefix)SYNC_CONCURRENCY for sync.concurrency)"
            }
            throw ConfigurationError(environmentVariable: name, reason: reason)
        }
    }
}

/// Where a configuration's values came from: its files (the main one, then its drop-ins) and
/// its environment.
package struct ConfigurationSources: Sendable {
    var files: [(file: String, outline: ConfigurationFileOutline)] = []
    let environment: [String: String]
    let environmentProvider: KeyMappingProvider<EnvironmentVariablesProvider>

    init(environment: [String: String]) {
        self.environment = environment
        environmentProvider = EnvironmentVariablesProvider(environmentVariables: environment)
            .prefixKeys(with: ConfigKey(ConfigurationKeys.environmentPrefix))
    }

    /// Where `key`'s value came from: `environment variable NAME`, `FILE:LINE` (the last file
    /// that sets it), or `default`.
    package func origin(of key: String) -> String {
        let variable = ConfigurationKeys.environmentVariable(for: key)
        if environment[variable] != nil { return "environment variable \(variable)" }
        if let (file, outline) = files.last(where: { $0.outline.contains(key) }) {
            return outline.line(of: key).map { "\(file):\($0)" } ?? file
        }
        return "default"
    }

    /// Adds to an error about a key where its value came from: the environment variable that
    /// set it, or the file and line that did.
    func attribute(_ error: ConfigurationError) -> ConfigurationError {
        guard error.file == nil, error.environmentVariable == nil, let key = error.key else { return error }
        var error = error
        let variable = ConfigurationKeys.environmentVariable(for: key)
        if environment[variable] != nil {
            error.environmentVariable = variable
        } else if let (file, outline) = files.last(where: { $0.outline.contains(key) }) {
            error.file = file
            error.line = outline.line(of: key)
        }
        return error
    }
}

extension DaemonConfiguration {
    /// Every key, its value and where it came from, one per line (`sync.concurrency: 4  # /etc/errorbusd/errorbusd.yaml.d/10-local.yaml:2`).
    /// Secrets are never values: the `-file` keys name files, and a header's credential shows as
    /// `{credential:NAME}`.
    package func describe(_ sources: ConfigurationSources) -> String {
        ConfigurationKeys.table.map { key in
            let value = key.render(self)
            return "\(key.key): \(value.isEmpty ? "(none)" : value)  # \(sources.origin(of: key.key))"
        }.joined(separator: "\n")
    }
}
