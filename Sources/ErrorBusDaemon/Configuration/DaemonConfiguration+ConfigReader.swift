import ErrorBusUnits
package import Configuration
import ErrorBus
import ErrorBusHTTP
import Logging

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

extension DaemonConfiguration {
    /// Reads and checks the configuration from `reader`, then reads the client secret.
    ///
    /// The keys are the YAML file's, dot-separated: `api.base-url`, `sync.max-file-size`,
    /// `bus.retry-budget.floor-per-minute`; ``ConfigurationKeys`` lists them all and
    /// `etc/errorbusd/errorbusd.yaml` documents each. A key no provider has keeps its default.
    ///
    /// `environment` supplies what systemd passes: `$STATE_DIRECTORY` and `$RUNTIME_DIRECTORY`
    /// (the first path of each) become the defaults of `state.directory` and
    /// `control.socket-path`, and `$CREDENTIALS_DIRECTORY` is where the client secret is looked
    /// up when `auth.client-secret-file` is not set.
    ///
    /// Errors name the key but not where its value came from; ``load(file:environment:)`` adds
    /// the file and line, or the environment variable.
    ///
    /// `credentialSource` is for `errorbusd --check-config` run outside the service: where there
    /// is no `$CREDENTIALS_DIRECTORY`, the credential is read from the directory the installed
    /// unit loads it from (`/etc/errorbusd`), so that a correct installation checks as correct.
    package init(reader: ConfigReader, environment: [String: String] = [:], credentialSource: String? = nil) throws(ConfigurationError) {
        let settings = SettingReader(reader: reader)
        let systemd = try SystemdDirectoryEnvironment(environment: environment)
        self.init(
            api: try API(settings),
            auth: try Auth(settings),
            sync: try Sync(settings),
            loader: try Loader(settings),
            state: State(
                directory: try settings.optionalAbsolutePath("state.directory") ?? systemd.state ?? State().directory,
                minFreeSpace: try settings.byteSize("state.min-free-space", default: State().minFreeSpace, .atLeast(0))
            ),
            shutdown: Shutdown(drainTimeout: try settings.duration("shutdown.drain-timeout", default: .seconds(10), .atLeast(.zero))),
            log: Log(level: try settings.choice("log.level", default: .info, Self.logLevels)),
            control: try Control(settings, runtimeDirectory: systemd.runtime),
            health: try Health(settings),
            metrics: try Metrics(settings),
            bus: try Self.bus(settings)
        )
        // Last, so a typo elsewhere is reported before a secret that is not there yet; the upload
        // contract first of the two, as its mistakes are the configuration's (a header's
        // credential is read with it).
        if auth.method == .mtls, !api.baseURL.lowercased().hasPrefix("https://") {
            throw ConfigurationError(key: "auth.method", reason: "mtls signs in with a TLS client certificate, so api.base-url must be https://, got \"\(api.baseURL)\"")
        }
        let credentials = CredentialReader(credentialsDirectory: systemd.credentials, credentialSource: credentialSource)
        api.upload = try UploadContract(settings, credentials: credentials)
        try auth.readSecrets(credentials)
    }

    private static let logLevels: KeyValuePairs<String, Logger.Level> = [
        "trace": .trace, "debug": .debug, "info": .info, "notice": .notice,
        "warning": .warning, "error": .error, "critical": .critical,
    ]

    private static func bus(_ settings: SettingReader) throws(ConfigurationError) -> ErrorBusConfiguration {
        var bus = ErrorBusConfiguration()
        let positive = SettingReader.Bound<Duration>.greaterThan(.zero)

        let backoff = bus.backoff
        bus.backoff.base = try settings.duration("bus.backoff.base", default: backoff.base, positive)
        bus.backoff.factor = try settings.double("bus.backoff.factor", default: backoff.factor, .between(1, 100))
        bus.backoff.cap = try settings.duration("bus.backoff.cap", default: backoff.cap, positive)
        try ordered(settings, "bus.backoff.base", bus.backoff.base, "bus.backoff.cap", bus.backoff.cap)

        let rateLimit = bus.rateLimit
        bus.rateLimit.minimum = try settings.duration("bus.rate-limit.minimum", default: rateLimit.minimum, .atLeast(.zero))
        bus.rateLimit.maximum = try settings.duration("bus.rate-limit.maximum", default: rateLimit.maximum, positive)
        bus.rateLimit.jitter = try settings.double("bus.rate-limit.jitter", default: rateLimit.jitter, .between(0, 1))
        try ordered(settings, "bus.rate-limit.minimum", bus.rateLimit.minimum, "bus.rate-limit.maximum", bus.rateLimit.maximum)

        let reachability = bus.reachability
        bus.reachability.initialInterval = try settings.duration(
            "bus.reachability.initial-interval",
            default: reachability.initialInterval,
            positive
        )
        bus.reachability.factor = try settings.double("bus.reachability.factor", default: reachability.factor, .between(1, 100))
        bus.reachability.maximumInterval = try settings.duration(
            "bus.reachability.maximum-interval",
            default: reachability.maximumInterval,
            positive
        )
        try ordered(
            settings,
            "bus.reachability.initial-interval",
            bus.reachability.initialInterval,
            "bus.reachability.maximum-interval",
            bus.reachability.maximumInterval
        )
        bus.reachability.localMaximumInterval = try settings.duration(
            "bus.reachability.local-maximum-interval",
            default: reachability.localMaximumInterval,
            positive
        )
        bus.reachability.networkChangeSpread = try settings.duration(
            "bus.reachability.network-change-spread",
            default: reachability.networkChangeSpread,
            .atLeast(.zero)
        )

        let concurrency = bus.concurrency
        let maximum = try settings.int("bus.concurrency.maximum", default: concurrency.maximum, .between(1, 65_536))
        bus.concurrency = ErrorBusConfiguration.Concurrency(
            maximum: maximum,
            initial: try settings.int("bus.concurrency.initial", default: concurrency.initial, .between(1, maximum)),
            decrease: try settings.double("bus.concurrency.decrease", default: concurrency.decrease, .between(0.01, 1)),
            latencyTolerance: try settings.double("bus.concurrency.latency-tolerance", default: concurrency.latencyTolerance, .between(1, 100))
        )
        bus.release.spread = try settings.duration("bus.release.spread", default: bus.release.spread, .atLeast(.zero))

        let budget = bus.retryBudget
        bus.retryBudget.successRatio = try settings.double("bus.retry-budget.success-ratio", default: budget.successRatio, .between(0, 1))
        bus.retryBudget.floorPerMinute = try settings.double(
            "bus.retry-budget.floor-per-minute",
            default: budget.floorPerMinute,
            .greaterThan(0)
        )
        // Below one token the bucket could never pay for a retry.
        bus.retryBudget.capacity = try settings.double("bus.retry-budget.capacity", default: budget.capacity, .atLeast(1))

        let isolation = bus.isolation
        bus.isolation.maxAttempts = try settings.optionalInt("bus.isolation.max-attempts", default: isolation.maxAttempts, .atLeast(1))
        bus.isolation.backoff.base = try settings.duration("bus.isolation.backoff.base", default: isolation.backoff.base, positive)
        bus.isolation.backoff.factor = try settings.double("bus.isolation.backoff.factor", default: isolation.backoff.factor, .between(1, 100))
        bus.isolation.backoff.cap = try settings.duration("bus.isolation.backoff.cap", default: isolation.backoff.cap, positive)
        try ordered(settings, "bus.isolation.backoff.base", bus.isolation.backoff.base, "bus.isolation.backoff.cap", bus.isolation.backoff.cap)

        bus.maxParkedJobs = try settings.int("bus.max-parked-jobs", default: bus.maxParkedJobs, .atLeast(1))
        bus.deadLetterGroupingWindow = try settings.duration(
            "bus.dead-letter-grouping-window",
            default: bus.deadLetterGroupingWindow,
            positive
        )
        bus.eventBufferSize = try settings.int("bus.event-buffer-size", default: bus.eventBufferSize, .atLeast(1))
        bus.resolvedIncidentHistory = try settings.int(
            "bus.resolved-incident-history",
            default: bus.resolvedIncidentHistory,
            .atLeast(0)
        )
        bus.grouping = try settings.choice("bus.grouping", default: bus.grouping, Self.groupings)
        return bus
    }

    private static let groupings: KeyValuePairs<String, ErrorBusConfiguration.Grouping> = [
        "by-cause": .byCause, "per-job": .perJob,
    ]

    /// Checks `lower <= upper`, blaming whichever of the two keys was set (the upper one if both).
    private static func ordered(
        _ settings: SettingReader,
        _ lowerKey: String,
        _ lower: Duration,
        _ upperKey: String,
        _ upper: Duration
    ) throws(ConfigurationError) {
        guard lower > upper else { return }
        if settings.isSet(upperKey) || !settings.isSet(lowerKey) {
            throw ConfigurationError(
                key: upperKey,
                reason: "must be at least \(lowerKey) (\(DurationText.exact(lower))), got \"\(DurationText.exact(upper))\""
            )
        }
        throw ConfigurationError(
            key: lowerKey,
            reason: "must be at most \(upperKey) (\(DurationText.exact(upper))), got \"\(DurationText.exact(lower))\""
        )
    }
}

// MARK: - Sections

extension DaemonConfiguration.API {
    fileprivate init(_ settings: SettingReader) throws(ConfigurationError) {
        let defaults = Self()
        let baseURL = try Self.httpURL(settings, "api.base-url", default: defaults.baseURL)
        var probeURL: String?
        if let configured = settings.optionalString("api.probe-url", default: nil) {
            probeURL = try Self.checkHTTPURL(configured, key: "api.probe-url")
        }
        self.init(
            baseURL: baseURL,
            tokenPath: try Self.path(settings, "api.token-path", default: defaults.tokenPath),
            resourcesPath: try Self.path(settings, "api.resources-path", default: defaults.resourcesPath),
            probeURL: probeURL,
            realm: try settings.string("api.realm", default: defaults.realm),
            connectTimeout: try settings.duration("api.connect-timeout", default: defaults.connectTimeout, .greaterThan(.zero)),
            requestTimeout: try settings.duration("api.request-timeout", default: defaults.requestTimeout, .greaterThan(.zero)),
            caFile: try settings.optionalAbsolutePath("api.ca-file"),
            classify: try Self.classify(settings)
        )
    }

    private static func classify(_ settings: SettingReader) throws(ConfigurationError) -> [ClassificationOverride] {
        let key = "api.classify"
        var rules: [ClassificationOverride] = []
        for entry in settings.list(key) ?? [] {
            switch ClassificationOverride.parse(entry) {
            case .success(let rule):
                guard !rules.contains(where: { $0.status == rule.status && $0.problemType == rule.problemType }) else {
                    throw ConfigurationError(key: key, reason: "\"\(entry)\": \(rule.status)\(rule.problemType.map { " " + $0 } ?? "") is classified twice")
                }
                rules.append(rule)
            case .failure(let error):
                throw ConfigurationError(key: key, reason: "\"\(entry)\": \(error); expected \(ClassificationOverride.expectation)")
            }
        }
        return rules
    }

    private static func httpURL(_ settings: SettingReader, _ key: String, default defaultValue: String) throws(ConfigurationError) -> String {
        guard let text = settings.raw(key) else { return defaultValue }
        let url = try checkHTTPURL(text, key: key)
        // The paths are appended to it, so a trailing slash would double up.
        return url.hasSuffix("/") ? String(url.dropLast()) : url
    }

    /// `text` if it is an `http` or `https` URL with a host and no query, fragment or user info.
    private static func checkHTTPURL(_ text: String, key: String) throws(ConfigurationError) -> String {
        guard let components = URLComponents(string: text), let scheme = components.scheme?.lowercased(),
            scheme == "http" || scheme == "https"
        else {
            throw ConfigurationError(key: key, reason: "expected an http:// or https:// URL, got \"\(text)\"")
        }
        guard let host = components.host, !host.isEmpty else {
            throw ConfigurationError(key: key, reason: "expected a URL with a host, got \"\(text)\"")
        }
        guard components.query == nil, components.fragment == nil else {
            throw ConfigurationError(key: key, reason: "expected a URL without ?query or #fragment, got \"\(text)\"")
        }
        guard components.user == nil, components.password == nil else {
            throw ConfigurationError(key: key, reason: "expected a URL without user:password@; credentials belong in auth.*")
        }
        return text
    }

    /// A path under the base URL: starts with `/`, no query or fragment.
    private static func path(_ settings: SettingReader, _ key: String, default defaultValue: String) throws(ConfigurationError) -> String {
        guard let text = settings.raw(key) else { return defaultValue }
        guard text.hasPrefix("/"), !text.contains("?"), !text.contains("#"), !text.contains(" ") else {
            throw ConfigurationError(key: key, reason: "expected a path starting with / (without ?, # or spaces), got \"\(text)\"")
        }
        return text.count > 1 && text.hasSuffix("/") ? String(text.dropLast()) : text
    }
}

extension DaemonConfiguration.Sync {
    fileprivate init(_ settings: SettingReader) throws(ConfigurationError) {
        let defaults = Self()
        let outbox = try settings.absolutePath("sync.outbox", default: defaults.outbox)
        let sentDirectory = try settings.absolutePath("sync.sent-directory", default: Self.defaultSentDirectory)
        let move = try settings.choice("sync.after-delivery", default: false, ["delete": false, "move": true])
        if move, Self.sameDirectory(sentDirectory, outbox) {
            throw ConfigurationError(
                key: "sync.sent-directory",
                reason: "must differ from sync.outbox (\(outbox)), or delivered files would be sent again"
            )
        }
        let maxFileSize = try settings.byteSize("sync.max-file-size", default: defaults.maxFileSize, .atLeast(1))
        let maxBacklogBytes = try settings.optionalByteSize("sync.backlog.max-bytes", default: defaults.backlog.maxBytes, .atLeast(1))
        if let maxBacklogBytes, maxBacklogBytes < maxFileSize {
            throw ConfigurationError(
                key: "sync.backlog.max-bytes",
                reason: "must be at least sync.max-file-size (\(ByteCountText.exact(maxFileSize))), or a file of that size could never be taken, got \"\(ByteCountText.exact(maxBacklogBytes))\""
            )
        }
        self.init(
            outbox: outbox,
            afterDelivery: move ? .move(to: sentDirectory) : .delete,
            concurrency: try settings.int("sync.concurrency", default: defaults.concurrency, .between(1, 1_024)),
            maxFileSize: maxFileSize,
            rescanInterval: try settings.duration("sync.rescan-interval", default: defaults.rescanInterval, .greaterThan(.zero)),
            settleTime: try settings.duration("sync.settle-time", default: defaults.settleTime, .atLeast(.zero)),
            maxAge: try settings.optionalDuration("sync.max-age", default: defaults.maxAge, .atLeast(.seconds(1))),
            backlog: Backlog(
                maxBytes: maxBacklogBytes,
                maxFiles: try settings.optionalInt("sync.backlog.max-files", default: defaults.backlog.maxFiles, .atLeast(1)),
                overflow: try settings.choice(
                    "sync.backlog.overflow",
                    default: defaults.backlog.overflow,
                    ["reject-new": .rejectNew, "drop-oldest": .dropOldest]
                )
            ),
            deadLetters: DeadLetters(
                maxCount: try settings.int("sync.dead-letters.max-count", default: defaults.deadLetters.maxCount, .atLeast(0)),
                maxAge: try settings.optionalDuration("sync.dead-letters.max-age", default: defaults.deadLetters.maxAge, .atLeast(.seconds(60)))
            ),
            deliveredRetention: try settings.optionalDuration("sync.delivered-retention", default: defaults.deliveredRetention, .atLeast(.seconds(60)))
        )
    }

    private static func sameDirectory(_ a: String, _ b: String) -> Bool {
        func normalized(_ path: String) -> String {
            "/" + path.split(separator: "/").filter { $0 != "." }.joined(separator: "/")
        }
        return normalized(a) == normalized(b)
    }
}

extension DaemonConfiguration.Health {
    fileprivate init(_ settings: SettingReader) throws(ConfigurationError) {
        let defaults = Self()
        func durations(_ name: String, _ levels: Levels<Duration>) throws(ConfigurationError) -> Levels<Duration> {
            let levels = Levels(
                warning: try settings.optionalDuration("health.\(name).warning", default: levels.warning, .greaterThan(.zero)),
                critical: try settings.optionalDuration("health.\(name).critical", default: levels.critical, .greaterThan(.zero))
            )
            try ordered(name, levels, DurationText.exact)
            return levels
        }
        func counts(_ name: String, _ levels: Levels<Int>) throws(ConfigurationError) -> Levels<Int> {
            let levels = Levels(
                warning: try settings.optionalInt("health.\(name).warning", default: levels.warning, .atLeast(1)),
                critical: try settings.optionalInt("health.\(name).critical", default: levels.critical, .atLeast(1))
            )
            try ordered(name, levels) { "\($0)" }
            return levels
        }
        func ordered<Value>(_ name: String, _ levels: Levels<Value>, _ show: (Value) -> String, below: Bool = false) throws(ConfigurationError) {
            guard let warning = levels.warning, let critical = levels.critical else { return }
            if below ? critical > warning : critical < warning {
                throw ConfigurationError(
                    key: "health.\(name).critical",
                    reason: "must be \(below ? "at most" : "at least") health.\(name).warning (\(show(warning))), got \"\(show(critical))\""
                )
            }
        }
        let freeSpace = Levels(
            warning: try settings.optionalByteSize("health.free-space.warning", default: defaults.freeSpace.warning, .atLeast(0)),
            critical: try settings.optionalByteSize("health.free-space.critical", default: defaults.freeSpace.critical, .atLeast(0))
        )
        try ordered("free-space", freeSpace, ByteCountText.exact, below: true)
        self.init(
            oldestJob: try durations("oldest-job", defaults.oldestJob),
            parked: try counts("parked", defaults.parked),
            deadLetters: try counts("dead-letters", defaults.deadLetters),
            incidentAge: try durations("incident-age", defaults.incidentAge),
            freeSpace: freeSpace,
            notDelivering: try durations("not-delivering", defaults.notDelivering)
        )
    }
}

extension DaemonConfiguration.Metrics {
    fileprivate init(_ settings: SettingReader) throws(ConfigurationError) {
        let key = "metrics.listen"
        let listen = try settings.optional(key, default: nil) { text throws(ConfigurationError) -> ListenAddress in
            guard let address = ListenAddress(parsing: text) else {
                throw ConfigurationError(
                    key: key,
                    reason: "expected HOST:PORT (127.0.0.1:9464, [::1]:9464, 0.0.0.0:9464, localhost:9464), or nothing for no listener, got \"\(text)\""
                )
            }
            return address
        }
        self.init(listen: listen)
    }
}

extension DaemonConfiguration.Loader {
    fileprivate init(_ settings: SettingReader) throws(ConfigurationError) {
        let key = "loader.resources"
        var resources: [Resource] = []
        for entry in settings.list(key) ?? [] {
            // The last =: a URL's query may hold some, an interval never does.
            guard let equals = entry.lastIndex(of: "=") else {
                throw ConfigurationError(key: key, reason: "expected NAME=INTERVAL (motd.txt=5m) or URL=INTERVAL, got \"\(entry)\"")
            }
            let source = String(entry[..<equals].configurationTrimmed)
            let intervalText = String(entry[entry.index(after: equals)...].configurationTrimmed)
            var name = source
            var url: String?
            if source.lowercased().hasPrefix("http://") || source.lowercased().hasPrefix("https://") {
                guard let components = URLComponents(string: source), let host = components.host, !host.isEmpty,
                    components.user == nil, components.fragment == nil
                else {
                    throw ConfigurationError(key: key, reason: "expected an http(s) URL with a host (no user:password@ or #fragment), got \"\(source)\"")
                }
                name = components.path.split(separator: "/").last.map(String.init) ?? ""
                guard SafeFileName.isSafe(name) else {
                    throw ConfigurationError(
                        key: key,
                        reason: "\(source): the URL's last path segment names the local copy, so it must be \(SafeFileName.expectation), got \"\(name)\""
                    )
                }
                url = source
            }
            guard SafeFileName.isSafe(name) else {
                throw ConfigurationError(key: key, reason: "expected a resource name of \(SafeFileName.expectation), got \"\(name)\"")
            }
            guard let interval = DurationFormat.parse(intervalText) else {
                throw ConfigurationError(key: key, reason: "\(name): expected \(DurationFormat.expectation), got \"\(intervalText)\"")
            }
            guard interval >= .seconds(1) else {
                throw ConfigurationError(key: key, reason: "\(name): expected an interval of at least 1s, got \"\(intervalText)\"")
            }
            guard !resources.contains(where: { $0.name == name }) else {
                throw ConfigurationError(key: key, reason: "\(name) is listed twice")
            }
            resources.append(Resource(name: name, url: url, interval: interval))
        }
        self.init(
            directory: try settings.absolutePath("loader.directory", default: Self().directory),
            resources: resources
        )
    }
}

extension DaemonConfiguration.Control {
    /// `sun_path` holds 108 bytes, one of them the terminating NUL.
    static let maximumSocketPathLength = 107

    fileprivate init(_ settings: SettingReader, runtimeDirectory: String?) throws(ConfigurationError) {
        let defaults = Self()
        let defaultPath = runtimeDirectory.map { $0 + "/" + Self.socketName } ?? defaults.socketPath
        let socketPath = try settings.optionalAbsolutePath("control.socket-path") ?? defaultPath
        guard socketPath.utf8.count <= Self.maximumSocketPathLength else {
            throw ConfigurationError(
                key: "control.socket-path",
                reason: "is \(socketPath.utf8.count) bytes long; a Unix socket path holds at most \(Self.maximumSocketPathLength)"
            )
        }
        let group = settings.optionalString("control.group", default: defaults.group)
        if let group, !Self.isGroupName(group) {
            throw ConfigurationError(
                key: "control.group",
                reason: "expected a group name (letters, digits, _, - and ., not starting with -), or nothing for root only, got \"\(group)\""
            )
        }
        self.init(
            socketPath: socketPath,
            group: group,
            maxConnections: try settings.int("control.max-connections", default: defaults.maxConnections, .between(1, 65_536)),
            maxConnectionsPerUser: try settings.int("control.max-connections-per-user", default: defaults.maxConnectionsPerUser, .between(1, 65_536))
        )
    }

    /// A portable group name, or a numeric gid.
    private static func isGroupName(_ name: String) -> Bool {
        !name.hasPrefix("-") && name.utf8.count <= 256
            && name.allSatisfy { $0.isASCII && ($0.isLetter || $0.isNumber || "_-.".contains($0)) }
    }
}
