import Configuration
import Yams

/// The keys a configuration file sets, the line each is on and its value as text, after checking
/// that the file is YAML errorbusd understands: a mapping of known sections and keys, a scalar
/// where a value goes, a list of scalars where a list goes.
///
/// The walk exists because swift-configuration's providers read keys on demand and would
/// silently ignore a misspelt one. Its values reach the `ConfigReader` through ``provider``.
/// The file is parsed once, here, and without Yams' default tag resolver: that resolver compiles
/// `NSRegularExpression`s, starting ICU's regular-expression engine (resident for the daemon's
/// whole life) only to tag scalars that ``SettingReader`` reads as text anyway.
struct ConfigurationFileOutline: Sendable {
    /// The 1-based line of every key (and section) the file sets, by dotted key.
    private(set) var lines: [String: Int] = [:]
    /// Every value the file sets, as text (a list as a list of text), by key.
    private(set) var values: [AbsoluteConfigKey: ConfigValue] = [:]

    /// Parses and checks `text`, the contents of `file`.
    init(parsing text: String, file: String) throws(ConfigurationError) {
        let root: Node?
        do {
            root = try Yams.compose(yaml: text, .basic)
        } catch {
            throw Self.syntaxError(error, file: file, text: text)
        }
        guard let root else { return }  // an empty file, or only comments: all defaults
        if case .scalar(let scalar) = root, Self.isNull(scalar) { return }
        guard case .mapping(let mapping) = root else {
            throw ConfigurationError(
                file: file,
                line: root.mark?.line,
                reason: "expected a mapping of sections (api:, auth:, sync:, …) at the top level, got \(Self.describe(root))"
            )
        }
        try walk(mapping, path: "", file: file)
    }

    /// The line `key` is on, or `nil` if the file does not set it.
    func line(of key: String) -> Int? {
        lines[key]
    }

    /// Whether the file sets nothing at all (empty, comments only, or `null`).
    var isEmpty: Bool {
        lines.isEmpty
    }

    /// Whether the file sets `key`.
    func contains(_ key: String) -> Bool {
        lines[key] != nil
    }

    /// The file's values, for a `ConfigReader`.
    func provider(file: String) -> InMemoryProvider {
        InMemoryProvider(name: file, values: values)
    }

    private mutating func walk(_ mapping: Node.Mapping, path: String, file: String) throws(ConfigurationError) {
        for (keyNode, value) in mapping {
            let line = keyNode.mark?.line
            guard let name = keyNode.scalar?.string else {
                throw ConfigurationError(
                    file: file,
                    line: line,
                    key: path.isEmpty ? nil : path,
                    reason: "expected a key name, got \(Self.describe(keyNode))"
                )
            }
            let key = path.isEmpty ? name : path + "." + name
            if name.contains(".") {
                // swift-configuration would flatten `sync.concurrency:` into the same key as the
                // nested form; one spelling keeps a key from being set twice unnoticed.
                var reason = "unknown key"
                if ConfigurationKeys.shapes[key] != nil || ConfigurationKeys.isSection(key) {
                    let levels = name.split(separator: ".", omittingEmptySubsequences: false).map { $0 + ":" }
                    reason += "; YAML keys nest rather than contain dots: write it one level per key (\(levels.joined(separator: ", ")))"
                }
                throw ConfigurationError(file: file, line: line, key: key, reason: reason)
            }
            lines[key] = line

            if let advice = ConfigurationKeys.refused[key] {
                throw ConfigurationError(file: file, line: line, key: key, reason: advice)
            }
            if ConfigurationKeys.isSection(key) {
                switch value {
                case .mapping(let section):
                    try walk(section, path: key, file: file)
                case .scalar(let scalar) where Self.isNull(scalar):
                    continue  // `api:` with nothing under it
                default:
                    throw ConfigurationError(
                        file: file,
                        line: line,
                        key: key,
                        reason: "expected a section with keys (\(Self.listChildren(of: key))), got \(Self.describe(value))"
                    )
                }
            } else if let shape = ConfigurationKeys.shapes[key] {
                try Self.check(value, shape: shape, key: key, line: line, file: file)
                values[AbsoluteConfigKey(ConfigKey(key).components)] = Self.configValue(value)
            } else {
                var reason = "unknown key"
                if let suggestion = ConfigurationKeys.suggestion(for: name, in: path) {
                    reason += "; did you mean \(suggestion)?"
                } else {
                    let scope = path.isEmpty ? "at the top level" : "in \(path)"
                    reason += "; known \(scope): \(Self.listChildren(of: path))"
                }
                throw ConfigurationError(file: file, line: line, key: key, reason: reason)
            }
        }
    }

    private static func check(_ value: Node, shape: ConfigurationKey.Shape, key: String, line: Int?, file: String) throws(ConfigurationError) {
        switch (shape, value) {
        case (.value, .scalar(let scalar)) where isNull(scalar):
            throw ConfigurationError(
                file: file,
                line: line,
                key: key,
                reason: "has no value; remove the key to use the default"
            )
        case (.value, .scalar), (.optionalValue, .scalar):
            return
        case (.list, .scalar(let scalar)) where isNull(scalar):
            return
        case (.list, .sequence(let sequence)):
            for item in sequence {
                if let scalar = item.scalar, !isNull(scalar) { continue }
                throw ConfigurationError(
                    file: file,
                    line: item.mark?.line ?? line,
                    key: key,
                    reason: "expected a list of single values, got \(describe(item)) in it"
                )
            }
        case (.list, _):
            throw ConfigurationError(file: file, line: line, key: key, reason: "expected a list, got \(describe(value))")
        default:
            throw ConfigurationError(file: file, line: line, key: key, reason: "expected a single value, got \(describe(value))")
        }
    }

    /// A checked value as text: a scalar's own characters (`"30s"`, `16`, `~`), whatever YAML
    /// type a resolver would give it; a list as its items' text.
    private static func configValue(_ value: Node) -> ConfigValue {
        switch value {
        case .sequence(let sequence): ConfigValue(.stringArray(sequence.compactMap(\.scalar?.string)), isSecret: false)
        default: ConfigValue(.string(value.scalar?.string ?? ""), isSecret: false)
        }
    }

    /// Turns a Yams error into one line with the file, the line and the parser's complaint.
    private static func syntaxError(_ error: any Error, file: String, text: String) -> ConfigurationError {
        guard let yamlError = error as? YamlError else {
            return ConfigurationError(file: file, reason: "not valid YAML: \(error)")
        }
        switch yamlError {
        case .scanner(let context, let problem, let mark, _),
            .parser(let context, let problem, let mark, _),
            .composer(let context, let problem, let mark, _):
            var reason = "not valid YAML: "
            if let context, problem.hasPrefix("but ") {
                reason += "\(context.text), \(problem)"  // "expected a single document in the stream, but found another document"
            } else if let context {
                reason += "\(problem) (\(context.text) on line \(context.mark.line))"
            } else {
                reason += problem
            }
            let line = text.split(separator: "\n", omittingEmptySubsequences: false).dropFirst(mark.line - 1).first
            if let line, line.prefix(while: { $0 == " " || $0 == "\t" }).contains("\t") {
                reason += "; YAML is indented with spaces, not tabs"
            }
            return ConfigurationError(file: file, line: mark.line, reason: reason)
        case .duplicatedKeysInMapping(let duplicates, let context):
            let keys = duplicates.map { "\"\($0)\"" }.joined(separator: ", ")
            return ConfigurationError(file: file, line: context.mark.line, reason: "not valid YAML: \(keys) set twice in one mapping")
        case .reader(let problem, _, _, _):
            return ConfigurationError(file: file, reason: "not valid YAML: \(problem)")
        case .dataCouldNotBeDecoded:
            return ConfigurationError(file: file, reason: "not valid YAML: not UTF-8 text")
        default:
            return ConfigurationError(file: file, reason: "not valid YAML: \(yamlError)")
        }
    }

    /// Whether a scalar is YAML's null: `~`, `null`, or nothing at all (`key:`), unquoted.
    static func isNull(_ scalar: Node.Scalar) -> Bool {
        guard scalar.style == .plain || scalar.style == .any else { return false }
        return ["", "~", "null", "Null", "NULL"].contains(scalar.string)
    }

    private static func describe(_ node: Node) -> String {
        switch node {
        case .scalar(let scalar): isNull(scalar) ? "nothing" : "\"\(scalar.string)\""
        case .mapping: "a mapping"
        case .sequence: "a list"
        case .alias: "an alias"
        }
    }

    private static func listChildren(of path: String) -> String {
        (ConfigurationKeys.children[path] ?? []).joined(separator: ", ")
    }
}
