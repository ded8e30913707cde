import Configuration

/// One key of errorbusd's configuration, as its section's table declares it: its name, what it
/// holds, its default, its bound, its documentation and its environment variable; how it is
/// read, shown and compared.
///
/// The tables (``DaemonConfiguration/sections``) are the one list of keys: the reader reads what
/// they declare, the file and environment checks refuse what they do not, and the reference
/// (`errorbusd --config-reference`) and the example file are written from them.
struct ConfigurationKey: Sendable {
    /// What a key holds.
    enum Shape: Sendable {
        /// One scalar; YAML `null` or an empty value is an error.
        case value
        /// One scalar, or `null`/empty: "none", or for a default that depends on the environment
        /// (`state.directory`, `control.socket-path`), that default.
        case optionalValue
        /// A list of scalars (YAML sequence; comma-separated in the environment).
        case list
    }

    /// The dotted key: `sync.backlog.max-bytes`.
    var key: String
    /// The key in its section: `backlog.max-bytes`.
    var name: String
    var shape: Shape
    /// What the reference calls its type: `duration`, `size`, `one of delete, move`, …
    var type: String
    /// Its bound in words, if any.
    var bounds: String?
    /// The default as the example file writes it (empty: nothing).
    var defaultValue: String
    /// The default in words, where the value alone does not say it.
    var defaultNote: String?
    /// Shown commented out in the example, instead of a value (the secret files).
    var example: String?
    /// What it does, in the reference's words.
    var doc: String
    /// Whether a change takes a restart rather than a reload.
    var restart: Bool
    /// The value in a configuration, as the file would write it.
    var render: @Sendable (DaemonConfiguration) -> String
    /// Whether two configurations hold the same value.
    var isEqual: @Sendable (DaemonConfiguration, DaemonConfiguration) -> Bool
    /// Reads the key from its section's reader into a configuration.
    var read: @Sendable (SettingReader, inout DaemonConfiguration) throws(ConfigurationError) -> Void

    /// The environment variable that sets it: `ERRORBUSD_` and the key upper-cased, with `_` for
    /// `.` and `-`, as swift-configuration's `EnvironmentVariablesProvider` maps it.
    var environmentVariable: String {
        ConfigurationKeys.environmentVariable(for: key)
    }

    /// The default in words: the note, or the value (`empty`, `none` where there is none).
    var defaultText: String {
        if let defaultNote { return defaultNote }
        switch defaultValue {
        case "": return example == nil ? "empty" : "unset"
        case "[]": return "none"
        default: return defaultValue
        }
    }
}

/// One key of section `Section`, before the section's place in ``DaemonConfiguration`` is known.
struct SectionKey<Section: Sendable>: Sendable {
    var name: String
    var shape: ConfigurationKey.Shape
    var type: String
    var bounds: String?
    var defaultValue: String?
    var defaultNote: String?
    var example: String?
    var doc: String
    var restart: Bool
    var render: @Sendable (Section) -> String
    var read: @Sendable (SettingReader, inout Section) throws(ConfigurationError) -> Void

    /// Key `name`, held at `path` and read as `type`.
    init<Value: Sendable>(
        _ name: String,
        _ path: any WritableKeyPath<Section, Value> & Sendable,
        _ type: ValueType<Value>,
        restart: Bool = false,
        default defaultNote: String? = nil,
        value defaultValue: String? = nil,
        example: String? = nil,
        _ doc: String
    ) {
        self.name = name
        self.shape = type.shape
        self.type = type.name
        self.bounds = type.bounds
        self.defaultValue = defaultValue
        self.defaultNote = defaultNote
        self.example = example
        self.doc = doc
        self.restart = restart
        self.render = { type.format($0[keyPath: path]) }
        self.read = { settings, section throws(ConfigurationError) in
            if let value = try type.read(settings, name) { section[keyPath: path] = value }
        }
    }

    /// Key `name`, read by `read` and shown by `render`: a key whose value goes into a setting
    /// together with another's (`sync.after-delivery`), or one the section's `validate` reads
    /// (`read` does nothing).
    init(
        _ name: String,
        shape: ConfigurationKey.Shape = .value,
        type: String,
        bounds: String? = nil,
        restart: Bool = false,
        default defaultNote: String? = nil,
        value defaultValue: String? = nil,
        _ doc: String,
        render: @escaping @Sendable (Section) -> String,
        read: @escaping @Sendable (SettingReader, inout Section) throws(ConfigurationError) -> Void = { _, _ in }
    ) {
        self.name = name
        self.shape = shape
        self.type = type
        self.bounds = bounds
        self.defaultValue = defaultValue
        self.defaultNote = defaultNote
        self.example = nil
        self.doc = doc
        self.restart = restart
        self.render = render
        self.read = read
    }
}

/// A section of the configuration (`sync`, `bus`): its keys in the order the reference documents
/// them, what its subsections are for, and the rules between its keys.
struct ConfigurationSection<Section: Sendable>: Sendable {
    var name: String
    var doc: String
    /// What each subsection is for (`backlog` in `sync`), by its name in the section.
    var subsections: [String: String] = [:]
    var keys: [SectionKey<Section>]
    /// The rules between keys, run once every key was read.
    var validate: @Sendable (SettingReader, inout Section) throws(ConfigurationError) -> Void = { _, _ in }

    /// The section held at `path` of a ``DaemonConfiguration``.
    func at(_ path: any WritableKeyPath<DaemonConfiguration, Section> & Sendable) -> AnyConfigurationSection {
        let defaults = DaemonConfiguration()[keyPath: path]
        let name = self.name
        let keys = self.keys.map { key in
            let render = key.render
            let read = key.read
            return ConfigurationKey(
                key: name + "." + key.name,
                name: key.name,
                shape: key.shape,
                type: key.type,
                bounds: key.bounds,
                defaultValue: key.defaultValue ?? render(defaults),
                defaultNote: key.defaultNote,
                example: key.example,
                doc: key.doc,
                restart: key.restart,
                render: { render($0[keyPath: path]) },
                isEqual: { render($0[keyPath: path]) == render($1[keyPath: path]) },
                read: { settings, configuration throws(ConfigurationError) in try read(settings, &configuration[keyPath: path]) }
            )
        }
        let validate = self.validate
        return AnyConfigurationSection(
            name: name,
            doc: doc,
            subsections: subsections,
            keys: keys,
            validate: { settings, configuration throws(ConfigurationError) in try validate(settings, &configuration[keyPath: path]) }
        )
    }
}

/// A section, placed in ``DaemonConfiguration``.
struct AnyConfigurationSection: Sendable {
    var name: String
    var doc: String
    var subsections: [String: String]
    var keys: [ConfigurationKey]
    var validate: @Sendable (SettingReader, inout DaemonConfiguration) throws(ConfigurationError) -> Void

    /// Reads every key, then checks the rules between them.
    func read(_ reader: ConfigReader, into configuration: inout DaemonConfiguration) throws(ConfigurationError) {
        let settings = SettingReader(reader, section: name)
        for key in keys {
            try key.read(settings, &configuration)
        }
        try validate(settings, &configuration)
    }
}

/// The keys of every section, and what the file and environment checks need to know of them.
enum ConfigurationKeys {
    /// Environment variables are the keys under this prefix: `api.base-url` is read from
    /// `ERRORBUSD_API_BASE_URL`.
    static let environmentPrefix = "errorbusd"

    /// Every key, in the order the reference documents them.
    static let table: [ConfigurationKey] = DaemonConfiguration.sections.flatMap(\.keys)

    /// Every key and its shape.
    static let all: [(key: String, shape: ConfigurationKey.Shape)] = table.map { ($0.key, $0.shape) }

    /// The shape of each key.
    static let shapes: [String: ConfigurationKey.Shape] = Dictionary(uniqueKeysWithValues: all.map { ($0.key, $0.shape) })

    /// Keys that are refused rather than unknown, with what to do instead.
    static let refused: [String: String] = [
        "api.items-path": """
            replaced by api.upload.url, the whole upload target with placeholders: /v1/items becomes \
            /v1/items/{sha256}
            """,
        "auth.client-secret": """
            the client secret is never read from the configuration; put it in a file readable only by \
            errorbusd and set auth.client-secret-file, or pass it with systemd's LoadCredential=client-secret:PATH
            """,
        "auth.token": """
            the bearer token is never read from the configuration; put it in a file readable only by \
            errorbusd and set auth.token-file, or pass it with systemd's LoadCredential=token:PATH
            """,
        "auth.password": """
            the password is never read from the configuration; put it in a file readable only by \
            errorbusd and set auth.password-file, or pass it with systemd's LoadCredential=password:PATH
            """,
        "bus.release.concurrency": """
            replaced by bus.concurrency.maximum, which bounds the uploads under way to one API, first \
            runs and released jobs together; the number in flight adapts below it
            """,
    ]

    /// Every section (`api`, `bus`, `bus.backoff`, …), and the names directly under each; `""` is
    /// the top level.
    static let children: [String: [String]] = {
        var children: [String: [String]] = [:]
        for (key, _) in all {
            let components = key.split(separator: ".").map(String.init)
            for depth in 0..<components.count {
                let parent = components[..<depth].joined(separator: ".")
                if !(children[parent] ?? []).contains(components[depth]) {
                    children[parent, default: []].append(components[depth])
                }
            }
        }
        return children
    }()

    /// Whether `path` is a section (holds keys) rather than a key.
    static func isSection(_ path: String) -> Bool {
        children[path] != nil
    }

    /// The environment variable of `key`, in swift-configuration's own mapping.
    static func environmentVariable(for key: String) -> String {
        let absoluteKey = AbsoluteConfigKey(ConfigKey(key).components)
        return (try? environmentNames.value(forKey: absoluteKey, type: .string).encodedKey) ?? key
    }

    private static let environmentNames = EnvironmentVariablesProvider(environmentVariables: [:])
        .prefixKeys(with: ConfigKey(environmentPrefix))

    /// Every variable that sets a key, and the key.
    static let variables: [String: String] = Dictionary(table.map { ($0.environmentVariable, $0.key) }, uniquingKeysWith: { first, _ in first })

    /// A hint for an unknown `name` found in section `parent`: the known key it most likely
    /// meant, as a full dotted key, or `nil`.
    ///
    /// Tries, in order: the same name spelled differently (`baseURL`, `base_url` for
    /// `base-url`); a known name in the same section at most a couple of edits away
    /// (`concurency`); the same name in another section (`sync.client-id` for `auth.client-id`).
    static func suggestion(for name: String, in parent: String) -> String? {
        let siblings = children[parent] ?? []
        func full(_ sibling: String) -> String { parent.isEmpty ? sibling : parent + "." + sibling }

        let normalized = normalize(name)
        if let match = siblings.first(where: { normalize($0) == normalized }) {
            return full(match)
        }
        if let nearest = nearest(name.lowercased(), among: siblings, within: max(1, min(3, name.count / 3))) {
            return full(nearest)
        }
        let elsewhere = all.map(\.key).filter { key in
            key.split(separator: ".").last.map { normalize(String($0)) == normalized } ?? false
        }
        if elsewhere.count == 1 {
            return elsewhere[0]
        }
        let sections = children.keys.filter { !$0.isEmpty && normalize(String($0.split(separator: ".").last!)) == normalized }
        if sections.count == 1 {
            return sections.first
        }
        return nil
    }

    /// A hint for an unknown `ERRORBUSD_*` variable: the known one nearest to it.
    static func suggestion(forVariable name: String) -> String? {
        nearest(name, among: variables.keys.sorted(), within: 3)
    }

    /// The candidate at most `threshold` edits from `name`, the nearest (the first of equals).
    static func nearest(_ name: String, among candidates: [String], within threshold: Int) -> String? {
        candidates
            .map { (candidate: $0, distance: editDistance(name, $0)) }
            .filter { $0.distance <= threshold }
            .min { $0.distance < $1.distance }?
            .candidate
    }

    /// Lower case without `-` and `_`, so `baseURL`, `base_url` and `base-url` compare equal.
    private static func normalize(_ name: String) -> String {
        String(name.lowercased().filter { $0 != "-" && $0 != "_" })
    }

    /// The Levenshtein distance between `a` and `b`.
    static func editDistance(_ a: String, _ b: String) -> Int {
        let a = Array(a)
        let b = Array(b)
        if a.isEmpty { return b.count }
        if b.isEmpty { return a.count }
        var previous = Array(0...b.count)
        var current = [Int](repeating: 0, count: b.count + 1)
        for i in 1...a.count {
            current[0] = i
            for j in 1...b.count {
                let substitution = previous[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1)
                current[j] = min(previous[j] + 1, current[j - 1] + 1, substitution)
            }
            swap(&previous, &current)
        }
        return previous[b.count]
    }
}
