import ErrorBusUnits
import Configuration

/// One section's settings from a `ConfigReader` scoped to it (`sync`, `api.upload`), each failure
/// a ``ConfigurationError`` naming the whole key and saying what was expected and what was found.
///
/// Values are read as text and parsed by a ``ValueType`` rather than with `reader.int(forKey:)`
/// and friends: those return the default when a value does not convert, which would turn
/// `concurrency: sixteen` into a silent 16. Text is what the YAML and environment providers hold
/// anyway; for providers that hold typed values (an `InMemoryProvider` in code) the other types
/// are tried too.
struct SettingReader {
    /// The reader, scoped to ``section``.
    let reader: ConfigReader
    /// The section's dotted name; empty for the top level.
    let section: String

    init(_ root: ConfigReader, section: String) {
        self.reader = section.isEmpty ? root : root.scoped(to: ConfigKey(section))
        self.section = section
    }

    /// The whole dotted key of `name` (`concurrency` in `sync` is `sync.concurrency`).
    func key(_ name: String) -> String {
        section.isEmpty ? name : section + "." + name
    }

    /// The value of `name` as text, or `nil` if no provider has it.
    func raw(_ name: String) -> String? {
        let configKey = ConfigKey(name)
        if let string = reader.string(forKey: configKey) { return string }
        if let int = reader.int(forKey: configKey) { return String(int) }
        if let double = reader.double(forKey: configKey) { return String(double) }
        if let bool = reader.bool(forKey: configKey) { return String(bool) }
        if let array = reader.stringArray(forKey: configKey) { return array.joined(separator: ",") }
        return nil
    }

    /// Whether some provider sets `name`.
    func isSet(_ name: String) -> Bool {
        raw(name) != nil
    }

    /// The list at `name` (a YAML sequence, or comma-separated text), without empty items; `nil`
    /// if no provider has it.
    func list(_ name: String) -> [String]? {
        let items = reader.stringArray(forKey: ConfigKey(name)) ?? raw(name).map { $0.split(separator: ",").map(String.init) }
        return items?.map { String($0.configurationTrimmed) }.filter { !$0.isEmpty }
    }

    /// The value of `name` read as `type`, or `defaultValue` when no provider has it.
    func value<Value>(_ name: String, _ type: ValueType<Value>, default defaultValue: Value) throws(ConfigurationError) -> Value {
        try type.read(self, name) ?? defaultValue
    }

    /// Text, where an empty value (or YAML's `~`/`null`) means "none".
    func optionalString(_ name: String, default defaultValue: String?) -> String? {
        guard let text = raw(name) else { return defaultValue }
        return Self.meansNone(text) ? nil : text
    }

    /// Whether `text` spells "none": empty, or YAML's null.
    static func meansNone(_ text: String) -> Bool {
        ["", "~", "null", "Null", "NULL"].contains(text)
    }
}

/// A bound on a number, a duration or a size.
enum Bound<Value: Comparable & Sendable>: Sendable {
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

/// What a key holds: how its text is read and checked, and how a value is written back (in the
/// generated reference, the example file and `--check-config --show`).
struct ValueType<Value: Sendable>: Sendable {
    /// What the reference calls it: `duration`, `size`, `integer`, …
    var name: String
    /// Its bound in words (`between 1 and 1024`), if it has one.
    var bounds: String?
    var shape: ConfigurationKey.Shape = .value
    /// The value of the key `name` in a section, `nil` when no provider sets it.
    var read: @Sendable (SettingReader, String) throws(ConfigurationError) -> Value?
    /// The value as the configuration would write it.
    var format: @Sendable (Value) -> String

    /// A type read from the key's text by `parse(text, key)`.
    static func scalar(
        _ name: String,
        bounds: String? = nil,
        parse: @escaping @Sendable (String, String) throws(ConfigurationError) -> Value,
        format: @escaping @Sendable (Value) -> String
    ) -> Self {
        Self(
            name: name,
            bounds: bounds,
            read: { settings, name throws(ConfigurationError) in try settings.raw(name).map { text throws(ConfigurationError) in try parse(text, settings.key(name)) } },
            format: format
        )
    }

    /// The same, where nothing (an empty value, `~`, `null`) means none.
    var orNone: ValueType<Value?> {
        let read = self.read
        let format = self.format
        return ValueType<Value?>(
            name: name,
            bounds: bounds,
            shape: .optionalValue,
            read: { settings, name throws(ConfigurationError) -> Value?? in
                guard let text = settings.raw(name) else { return nil }
                return SettingReader.meansNone(text) ? .some(nil) : .some(try read(settings, name))
            },
            format: { $0.map(format) ?? "" }
        )
    }

    /// The same, where nothing keeps the default (one the environment may give).
    var orDefault: Self {
        var type = self
        let read = self.read
        type.shape = .optionalValue
        type.read = { settings, name throws(ConfigurationError) in
            guard let text = settings.raw(name), !SettingReader.meansNone(text) else { return nil }
            return try read(settings, name)
        }
        return type
    }
}

extension ValueType where Value == String {
    /// Text that must not be empty.
    static var text: Self {
        .scalar("text") { text, key throws(ConfigurationError) in
            guard !text.isEmpty else { throw ConfigurationError(key: key, reason: "has no value; remove it to use the default") }
            return text
        } format: { $0 }
    }

    /// Any text, nothing included.
    static var anyText: Self { .scalar("text", parse: { text, _ in text }, format: { $0 }) }

    /// An absolute path.
    static var absolutePath: Self {
        .scalar("path") { text, key throws(ConfigurationError) in
            guard text.hasPrefix("/") else {
                throw ConfigurationError(key: key, reason: "expected an absolute path (starting with /), got \"\(text)\"")
            }
            guard !text.utf8.contains(0) else {
                throw ConfigurationError(key: key, reason: "a path cannot contain a NUL character")
            }
            return text
        } format: { $0 }
    }
}

extension ValueType where Value == Int {
    /// A whole number (`_` may separate digits) within `bound`.
    static func integer(_ bound: Bound<Int>) -> Self {
        let bounds = bound.describe { "\($0)" }
        return .scalar("integer", bounds: bounds) { text, key throws(ConfigurationError) in
            guard let value = IntegerFormat.parse(text), bound.contains(value) else {
                throw ConfigurationError(key: key, reason: "expected an integer \(bounds), got \"\(text)\"")
            }
            return value
        } format: { "\($0)" }
    }
}

extension ValueType where Value == Double {
    /// A finite decimal number within `bound`.
    static func number(_ bound: Bound<Double>) -> Self {
        let bounds = bound.describe(Self.show)
        return .scalar("number", bounds: bounds) { text, key throws(ConfigurationError) in
            guard let digits = DigitSeparators.removed(from: text.configurationTrimmed), let value = Double(digits), value.isFinite,
                bound.contains(value)
            else {
                throw ConfigurationError(key: key, reason: "expected a number \(bounds), got \"\(text)\"")
            }
            return value
        } format: { Self.show($0) }
    }

    private static func show(_ value: Double) -> String {
        value == value.rounded() && abs(value) < 1e15 ? String(Int64(value)) : String(value)
    }
}

extension ValueType where Value == Duration {
    /// A duration in ``DurationFormat`` within `bound`.
    static func duration(_ bound: Bound<Duration>) -> Self {
        let bounds = bound.describe(DurationText.exact)
        return .scalar("duration", bounds: bounds) { text, key throws(ConfigurationError) in
            guard let value = DurationFormat.parse(text) else {
                throw ConfigurationError(key: key, reason: "expected \(DurationFormat.expectation), got \"\(text)\"")
            }
            guard bound.contains(value) else {
                throw ConfigurationError(key: key, reason: "expected a duration \(bounds), got \"\(text)\"")
            }
            return value
        } format: { DurationText.exact($0) }
    }
}

extension ValueType where Value == Int64 {
    /// A size in ``ByteSizeFormat`` within `bound`.
    static func size(_ bound: Bound<Int64>) -> Self {
        let bounds = bound.describe(ByteCountText.exact)
        return .scalar("size", bounds: bounds) { text, key throws(ConfigurationError) in
            guard let value = ByteSizeFormat.parse(text) else {
                throw ConfigurationError(key: key, reason: "expected \(ByteSizeFormat.expectation), got \"\(text)\"")
            }
            guard bound.contains(value) else {
                throw ConfigurationError(key: key, reason: "expected a size \(bounds), got \"\(text)\"")
            }
            return value
        } format: { ByteCountText.exact($0) }
    }
}

extension ValueType {
    /// One of a string enumeration's raw values, in any case.
    static func choice(_ type: Value.Type) -> Self where Value: CaseIterable & RawRepresentable, Value.RawValue == String {
        choice(Value.allCases.map { ($0.rawValue.lowercased(), $0) }, format: \.rawValue)
    }

    /// One of `choices`, by name in any case.
    static func choice(_ choices: [(String, Value)], format: @escaping @Sendable (Value) -> String) -> Self {
        let names = choices.map(\.0).joined(separator: ", ")
        return .scalar("one of \(names)") { text, key throws(ConfigurationError) in
            guard let match = choices.first(where: { $0.0 == text.lowercased() }) else {
                throw ConfigurationError(key: key, reason: "expected one of \(names), got \"\(text)\"")
            }
            return match.1
        } format: { format($0) }
    }

    /// A list whose items `parse` reads together (to refuse one listed twice).
    static func list(_ name: String, parse: @escaping @Sendable ([String], String) throws(ConfigurationError) -> Value, format: @escaping @Sendable (Value) -> [String]) -> Self {
        Self(
            name: name,
            shape: .list,
            read: { settings, name throws(ConfigurationError) in
                try settings.list(name).map { items throws(ConfigurationError) in try parse(items, settings.key(name)) }
            },
            format: { "[" + format($0).joined(separator: ", ") + "]" }
        )
    }
}
