import ErrorBusUnits
import Configuration

/// Typed, validated settings from a `ConfigReader`, each failure a ``ConfigurationError`` naming
/// the key and saying what was expected and what was found.
///
/// Values are read as text and parsed here rather than with `reader.int(forKey:)` and friends:
/// those return the default when a value does not convert, which would turn
/// `concurrency: sixteen` into a silent 16. Text is what the YAML and environment providers hold
/// anyway; for providers that hold typed values (an `InMemoryProvider` in code) the other types
/// are tried too.
struct SettingReader {
    let reader: ConfigReader

    /// A bound on a number or a duration.
    enum Bound<Value: Comparable> {
        case atLeast(Value)
        case greaterThan(Value)
        case between(Value, Value)

        func contains(_ value: Value) -> Bool {
            switch self {
            case .atLeast(let minimum): value >= minimum
            case .greaterThan(let minimum): value > minimum
            case .between(let minimum, let maximum): minimum <= value && value <= maximum
            }
        }

        func describe(_ show: (Value) -> String) -> String {
            switch self {
            case .atLeast(let minimum): "of at least \(show(minimum))"
            case .greaterThan(let minimum): "greater than \(show(minimum))"
            case .between(let minimum, let maximum): "between \(show(minimum)) and \(show(maximum))"
            }
        }
    }

    // MARK: - Raw values

    /// The value of `key` as text, or `nil` if no provider has it.
    func raw(_ key: String) -> String? {
        let configKey = ConfigKey(key)
        if let string = reader.string(forKey: configKey) { return string }
        if let int = reader.int(forKey: configKey) { return String(int) }
        if let double = reader.double(forKey: configKey) { return String(double) }
        if let bool = reader.bool(forKey: configKey) { return String(bool) }
        if let array = reader.stringArray(forKey: configKey) { return array.joined(separator: ",") }
        return nil
    }

    /// Whether some provider sets `key`.
    func isSet(_ key: String) -> Bool {
        raw(key) != nil
    }

    /// The list at `key` (a YAML sequence, or comma-separated text), without empty items; `nil`
    /// if no provider has it.
    func list(_ key: String) -> [String]? {
        let configKey = ConfigKey(key)
        let items = reader.stringArray(forKey: configKey) ?? raw(key).map { $0.split(separator: ",").map(String.init) }
        return items?.map { String($0.configurationTrimmed) }.filter { !$0.isEmpty }
    }

    // MARK: - Typed values

    /// Text that must not be empty.
    func string(_ key: String, default defaultValue: String) throws(ConfigurationError) -> String {
        guard let text = raw(key) else { return defaultValue }
        guard !text.isEmpty else {
            throw ConfigurationError(key: key, reason: "has no value; remove it to use the default, \"\(defaultValue)\"")
        }
        return text
    }

    /// Text, where an empty value (or YAML's `~`/`null`) means "none".
    func optionalString(_ key: String, default defaultValue: String?) -> String? {
        guard let text = raw(key) else { return defaultValue }
        return Self.meansNone(text) ? nil : text
    }

    /// A whole number within `bound`.
    func int(_ key: String, default defaultValue: Int, _ bound: Bound<Int>) throws(ConfigurationError) -> Int {
        guard let text = raw(key) else { return defaultValue }
        guard let value = IntegerFormat.parse(text), bound.contains(value) else {
            throw ConfigurationError(key: key, reason: "expected an integer \(bound.describe { "\($0)" }), got \"\(text)\"")
        }
        return value
    }

    /// A finite decimal number within `bound`.
    func double(_ key: String, default defaultValue: Double, _ bound: Bound<Double>) throws(ConfigurationError) -> Double {
        guard let text = raw(key) else { return defaultValue }
        guard let digits = DigitSeparators.removed(from: text.configurationTrimmed), let value = Double(digits), value.isFinite,
            bound.contains(value)
        else {
            throw ConfigurationError(key: key, reason: "expected a number \(bound.describe(Self.show)), got \"\(text)\"")
        }
        return value
    }

    /// A duration in ``DurationFormat`` within `bound`.
    func duration(_ key: String, default defaultValue: Duration, _ bound: Bound<Duration>) throws(ConfigurationError) -> Duration {
        guard let text = raw(key) else { return defaultValue }
        guard let value = DurationFormat.parse(text) else {
            throw ConfigurationError(key: key, reason: "expected \(DurationFormat.expectation), got \"\(text)\"")
        }
        guard bound.contains(value) else {
            throw ConfigurationError(key: key, reason: "expected a duration \(bound.describe(DurationText.exact)), got \"\(text)\"")
        }
        return value
    }

    /// A size in ``ByteSizeFormat`` within `bound`.
    func byteSize(_ key: String, default defaultValue: Int64, _ bound: Bound<Int64>) throws(ConfigurationError) -> Int64 {
        guard let text = raw(key) else { return defaultValue }
        guard let value = ByteSizeFormat.parse(text) else {
            throw ConfigurationError(key: key, reason: "expected \(ByteSizeFormat.expectation), got \"\(text)\"")
        }
        guard bound.contains(value) else {
            throw ConfigurationError(key: key, reason: "expected a size \(bound.describe(ByteCountText.exact)), got \"\(text)\"")
        }
        return value
    }

    /// A value `parse` reads from the text at `key`, where "none" (empty, `~`, `null`) is `nil`;
    /// `defaultValue` when no provider has the key.
    func optional<Value>(
        _ key: String,
        default defaultValue: Value?,
        _ parse: (String) throws(ConfigurationError) -> Value
    ) throws(ConfigurationError) -> Value? {
        guard let text = raw(key) else { return defaultValue }
        return Self.meansNone(text) ? nil : try parse(text)
    }

    /// A duration within `bound`, or none.
    func optionalDuration(_ key: String, default defaultValue: Duration?, _ bound: Bound<Duration>) throws(ConfigurationError) -> Duration? {
        try optional(key, default: defaultValue) { _ throws(ConfigurationError) in try duration(key, default: .zero, bound) }
    }

    /// A size within `bound`, or none.
    func optionalByteSize(_ key: String, default defaultValue: Int64?, _ bound: Bound<Int64>) throws(ConfigurationError) -> Int64? {
        try optional(key, default: defaultValue) { _ throws(ConfigurationError) in try byteSize(key, default: 0, bound) }
    }

    /// A whole number within `bound`, or none.
    func optionalInt(_ key: String, default defaultValue: Int?, _ bound: Bound<Int>) throws(ConfigurationError) -> Int? {
        try optional(key, default: defaultValue) { _ throws(ConfigurationError) in try int(key, default: 0, bound) }
    }

    /// An absolute path.
    func absolutePath(_ key: String, default defaultValue: String) throws(ConfigurationError) -> String {
        guard let text = raw(key) else { return defaultValue }
        try Self.checkAbsolutePath(text, key: key)
        return text
    }

    /// An absolute path, or "none" (empty, `~`, `null`).
    func optionalAbsolutePath(_ key: String) throws(ConfigurationError) -> String? {
        guard let text = optionalString(key, default: nil) else { return nil }
        try Self.checkAbsolutePath(text, key: key)
        return text
    }

    /// One of `choices`.
    func choice<Value>(_ key: String, default defaultValue: Value, _ choices: KeyValuePairs<String, Value>) throws(ConfigurationError) -> Value {
        guard let text = raw(key) else { return defaultValue }
        guard let match = choices.first(where: { $0.key == text.lowercased() }) else {
            let names = choices.map(\.key).joined(separator: ", ")
            throw ConfigurationError(key: key, reason: "expected one of \(names), got \"\(text)\"")
        }
        return match.value
    }

    // MARK: - Helpers

    /// Whether `text` spells "none": empty, or YAML's null.
    static func meansNone(_ text: String) -> Bool {
        ["", "~", "null", "Null", "NULL"].contains(text)
    }

    static func checkAbsolutePath(_ path: String, key: String) throws(ConfigurationError) {
        guard path.hasPrefix("/") else {
            throw ConfigurationError(key: key, reason: "expected an absolute path (starting with /), got \"\(path)\"")
        }
        guard !path.utf8.contains(0) else {
            throw ConfigurationError(key: key, reason: "a path cannot contain a NUL character")
        }
    }

    private static func show(_ value: Double) -> String {
        value == value.rounded() && abs(value) < 1e15 ? String(Int64(value)) : String(value)
    }
}
