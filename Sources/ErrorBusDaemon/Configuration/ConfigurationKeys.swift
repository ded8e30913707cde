/// The keys errorbusd's configuration knows, as the YAML file nests them and the environment
/// spells them.
///
/// swift-configuration reads keys on demand and never reports a key nobody asked for, so a typo
/// would silently fall back to a default. The file check (``ConfigurationFileOutline``) and the
/// environment check compare what is there against this list instead. A test makes sure
/// ``DaemonConfiguration/init(reader:environment:)`` reads exactly these keys.
enum ConfigurationKeys {
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

    /// Environment variables are the keys under this prefix: `api.base-url` is read from
    /// `ERRORBUSD_API_BASE_URL`.
    static let environmentPrefix = "errorbusd"

    /// Every key, in the order the example file documents them.
    static let all: [(key: String, shape: Shape)] = [
        ("api.base-url", .value),
        ("api.token-path", .value),
        ("api.resources-path", .value),
        ("api.probe-url", .optionalValue),
        ("api.realm", .value),
        ("api.connect-timeout", .value),
        ("api.request-timeout", .value),
        ("api.ca-file", .optionalValue),
        ("api.classify", .list),
        ("api.upload.method", .value),
        ("api.upload.url", .value),
        ("api.upload.body", .value),
        ("api.upload.multipart-field", .optionalValue),
        ("api.upload.headers", .list),
        ("api.upload.idempotency-header", .optionalValue),
        ("api.upload.delivered", .list),
        ("api.upload.receipt.json-pointer", .optionalValue),
        ("api.upload.receipt.header", .optionalValue),
        ("api.upload.receipt.value", .optionalValue),
        ("auth.method", .value),
        ("auth.client-id", .value),
        ("auth.client-secret-file", .optionalValue),
        ("auth.credential-name", .value),
        ("auth.refresh-margin", .value),
        ("auth.token-file", .optionalValue),
        ("auth.user", .optionalValue),
        ("auth.password-file", .optionalValue),
        ("auth.client-certificate-file", .optionalValue),
        ("auth.client-key-file", .optionalValue),
        ("sync.outbox", .value),
        ("sync.after-delivery", .value),
        ("sync.sent-directory", .value),
        ("sync.concurrency", .value),
        ("sync.max-file-size", .value),
        ("sync.rescan-interval", .value),
        ("sync.settle-time", .value),
        ("sync.max-age", .optionalValue),
        ("sync.backlog.max-bytes", .optionalValue),
        ("sync.backlog.max-files", .optionalValue),
        ("sync.backlog.overflow", .value),
        ("sync.dead-letters.max-count", .value),
        ("sync.dead-letters.max-age", .optionalValue),
        ("sync.delivered-retention", .optionalValue),
        ("loader.directory", .value),
        ("loader.resources", .list),
        ("state.directory", .optionalValue),
        ("state.min-free-space", .value),
        ("shutdown.drain-timeout", .value),
        ("log.level", .value),
        ("control.socket-path", .optionalValue),
        ("control.group", .optionalValue),
        ("control.max-connections", .value),
        ("control.max-connections-per-user", .value),
        ("health.oldest-job.warning", .optionalValue),
        ("health.oldest-job.critical", .optionalValue),
        ("health.parked.warning", .optionalValue),
        ("health.parked.critical", .optionalValue),
        ("health.dead-letters.warning", .optionalValue),
        ("health.dead-letters.critical", .optionalValue),
        ("health.incident-age.warning", .optionalValue),
        ("health.incident-age.critical", .optionalValue),
        ("health.free-space.warning", .optionalValue),
        ("health.free-space.critical", .optionalValue),
        ("health.not-delivering.warning", .optionalValue),
        ("health.not-delivering.critical", .optionalValue),
        ("metrics.listen", .optionalValue),
        ("bus.backoff.base", .value),
        ("bus.backoff.factor", .value),
        ("bus.backoff.cap", .value),
        ("bus.rate-limit.minimum", .value),
        ("bus.rate-limit.maximum", .value),
        ("bus.rate-limit.jitter", .value),
        ("bus.reachability.initial-interval", .value),
        ("bus.reachability.factor", .value),
        ("bus.reachability.maximum-interval", .value),
        ("bus.reachability.local-maximum-interval", .value),
        ("bus.reachability.network-change-spread", .value),
        ("bus.concurrency.maximum", .value),
        ("bus.concurrency.initial", .value),
        ("bus.concurrency.decrease", .value),
        ("bus.concurrency.latency-tolerance", .value),
        ("bus.release.spread", .value),
        ("bus.retry-budget.success-ratio", .value),
        ("bus.retry-budget.floor-per-minute", .value),
        ("bus.retry-budget.capacity", .value),
        ("bus.isolation.max-attempts", .optionalValue),
        ("bus.isolation.backoff.base", .value),
        ("bus.isolation.backoff.factor", .value),
        ("bus.isolation.backoff.cap", .value),
        ("bus.max-parked-jobs", .value),
        ("bus.dead-letter-grouping-window", .value),
        ("bus.event-buffer-size", .value),
        ("bus.resolved-incident-history", .value),
        ("bus.grouping", .value),
    ]

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

    /// The shape of each key.
    static let shapes: [String: Shape] = Dictionary(uniqueKeysWithValues: all.map { ($0.key, $0.shape) })

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
        let threshold = max(1, min(3, name.count / 3))
        let nearest = siblings
            .map { (sibling: $0, distance: editDistance(name.lowercased(), $0)) }
            .filter { $0.distance <= threshold }
            .min { $0.distance < $1.distance }
        if let nearest {
            return full(nearest.sibling)
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
