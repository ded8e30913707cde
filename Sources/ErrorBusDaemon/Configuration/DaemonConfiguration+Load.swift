import Configuration

extension DaemonConfiguration {
    /// The configuration file errorbusd reads unless told otherwise.
    package static let defaultFile = "/etc/errorbusd/errorbusd.yaml"

    /// Loads errorbusd's configuration: the built-in defaults, overridden by the YAML `file`,
    /// overridden by `ERRORBUSD_*` variables in `environment`; then reads the client secret.
    ///
    /// Keys are kebab-case and nested by section in YAML (`sync:` / `max-file-size: 10MiB`). Each
    /// key's environment variable is `ERRORBUSD_` and the key upper-cased with `_` for `.` and
    /// `-`, as swift-configuration's `EnvironmentVariablesProvider` maps keys:
    /// `api.base-url` is `ERRORBUSD_API_BASE_URL`, `sync.max-file-size` is
    /// `ERRORBUSD_SYNC_MAX_FILE_SIZE`, `bus.retry-budget.floor-per-minute` is
    /// `ERRORBUSD_BUS_RETRY_BUDGET_FLOOR_PER_MINUTE`. The list `loader.resources` is
    /// comma-separated there.
    ///
    /// Everything that is wrong is a ``ConfigurationError`` naming the file and line, or the
    /// variable, the key and the reason: a file that cannot be read, YAML that does not parse,
    /// unknown keys (with the nearest known one), unknown `ERRORBUSD_*` variables, values of the
    /// wrong type or out of range, relative paths, a missing or unreadable secret.
    ///
    /// - Parameters:
    ///   - file: The YAML file; `nil` for defaults and environment only. A file that is given
    ///     must exist.
    ///   - environment: The process environment (`ProcessInfo.processInfo.environment`):
    ///     `ERRORBUSD_*` overrides, and systemd's `STATE_DIRECTORY`, `RUNTIME_DIRECTORY` and
    ///     `CREDENTIALS_DIRECTORY`. Nothing else in it is read.
    ///   - credentialSource: For `--check-config` outside the service: where the installed unit
    ///     loads the client secret credential from, read when `$CREDENTIALS_DIRECTORY` is not set.
    package static func load(file: String?, environment: [String: String], credentialSource: String? = nil) throws(ConfigurationError) -> DaemonConfiguration {
        let environmentProvider = EnvironmentVariablesProvider(environmentVariables: environment)
            .prefixKeys(with: ConfigKey(ConfigurationKeys.environmentPrefix))
        try checkEnvironment(environment, provider: environmentProvider)

        var providers: [any ConfigProvider] = [environmentProvider]
        var outline: ConfigurationFileOutline?
        if let file {
            let text = try readFile(file)
            let fileOutline = try ConfigurationFileOutline(parsing: text, file: file)
            outline = fileOutline
            providers.append(fileOutline.provider(file: file))
        }

        do {
            return try DaemonConfiguration(reader: ConfigReader(providers: providers), environment: environment, credentialSource: credentialSource)
        } catch {
            throw attribute(error, file: file, outline: outline, environmentProvider: environmentProvider)
        }
    }

    /// The contents of the configuration file, as text.
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
    private static func checkEnvironment(_ environment: [String: String], provider: some ConfigProvider) throws(ConfigurationError) {
        let prefix = ConfigurationKeys.environmentPrefix.uppercased() + "_"
        let candidates = environment.keys.filter { $0.hasPrefix(prefix) }.sorted()
        guard !candidates.isEmpty else { return }

        let known = Dictionary(
            ConfigurationKeys.all.map { (variableName(for: $0.key, provider: provider), $0.key) },
            uniquingKeysWith: { first, _ in first }
        )
        let refused = Dictionary(
            ConfigurationKeys.refused.map { (variableName(for: $0.key, provider: provider), $0) },
            uniquingKeysWith: { first, _ in first }
        )
        for name in candidates where known[name] == nil {
            if let refusal = refused[name] {
                throw ConfigurationError(key: refusal.key, environmentVariable: name, reason: refusal.value)
            }
            var reason = "not a configuration variable"
            let nearest = known.keys
                .map { (name: $0, distance: ConfigurationKeys.editDistance(name, $0)) }
                .filter { $0.distance <= 3 }
                .min { ($0.distance, $0.name) < ($1.distance, $1.name) }
            if let nearest {
                reason += "; did you mean \(nearest.name)?"
            } else {
                reason += "; the variables are \(prefix) and a key upper-cased, with _ for . and - (\(prefix)SYNC_CONCURRENCY for sync.concurrency)"
            }
            throw ConfigurationError(environmentVariable: name, reason: reason)
        }
    }

    /// The environment variable `provider` reads `key` from, in the library's own mapping.
    private static func variableName(for key: String, provider: some ConfigProvider) -> String {
        let absoluteKey = AbsoluteConfigKey(ConfigKey(key).components)
        return (try? provider.value(forKey: absoluteKey, type: .string).encodedKey) ?? key
    }

    /// Adds to an error about a key where its value came from: the environment variable that
    /// set it, or the file and line that did.
    private static func attribute(
        _ error: ConfigurationError,
        file: String?,
        outline: ConfigurationFileOutline?,
        environmentProvider: some ConfigProvider
    ) -> ConfigurationError {
        guard error.file == nil, error.environmentVariable == nil, let key = error.key else { return error }
        var error = error
        let absoluteKey = AbsoluteConfigKey(ConfigKey(key).components)
        if let lookup = try? environmentProvider.value(forKey: absoluteKey, type: .string), lookup.value != nil {
            error.environmentVariable = lookup.encodedKey
        } else if let file, let outline, outline.contains(key) {
            error.file = file
            error.line = outline.line(of: key)
        }
        return error
    }
}
