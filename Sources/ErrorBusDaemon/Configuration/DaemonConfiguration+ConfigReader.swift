import ErrorBusUnits
package import Configuration
import ErrorBus
import ErrorBusHTTP

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

extension DaemonConfiguration {
    /// Reads and checks the configuration from `reader`, then reads the client secret.
    ///
    /// The keys are the YAML file's, dot-separated: `api.base-url`, `sync.max-file-size`,
    /// `bus.retry-budget.floor-per-minute`; ``sections`` declares them all, each section read
    /// through a reader scoped to it, and `errorbusd --config-reference` documents each. A key no
    /// provider has keeps its default.
    ///
    /// `environment` supplies what systemd passes: `$STATE_DIRECTORY` and `$RUNTIME_DIRECTORY`
    /// (the first path of each) become the defaults of `state.directory` and
    /// `control.socket-path`, and `$CREDENTIALS_DIRECTORY` is where the client secret is looked
    /// up when `auth.client-secret-file` is not set.
    ///
    /// Errors name the key but not where its value came from; ``load(file:environment:credentialSource:)``
    /// adds the file and line, or the environment variable.
    ///
    /// `credentialSource` is for `errorbusd --check-config` run outside the service: where there
    /// is no `$CREDENTIALS_DIRECTORY`, the credential is read from the directory the installed
    /// unit loads it from (`/etc/errorbusd`), so that a correct installation checks as correct.
    package init(reader: ConfigReader, environment: [String: String] = [:], credentialSource: String? = nil) throws(ConfigurationError) {
        let systemd = try SystemdDirectoryEnvironment(environment: environment)
        var configuration = DaemonConfiguration()
        if let state = systemd.state { configuration.state.directory = state }
        if let runtime = systemd.runtime { configuration.control.socketPath = runtime + "/" + Control.socketName }
        for section in Self.sections {
            try section.read(reader, into: &configuration)
        }
        self = configuration
        // Last, so a typo elsewhere is reported before a secret that is not there yet; the upload
        // contract first of the two, as its mistakes are the configuration's (a header's
        // credential is read with it).
        if auth.method == .mtls, !api.baseURL.lowercased().hasPrefix("https://") {
            throw ConfigurationError(key: "auth.method", reason: "mtls signs in with a TLS client certificate, so api.base-url must be https://, got \"\(api.baseURL)\"")
        }
        let credentials = CredentialReader(credentialsDirectory: systemd.credentials, credentialSource: credentialSource)
        api.upload = try UploadContract(SettingReader(reader, section: "api.upload"), credentials: credentials)
        if let parts = api.upload.parts {
            guard auth.method == .awsSigV4 else {
                throw ConfigurationError(key: "api.upload.parts.above", reason: "uploads in parts speak S3's multipart protocol, which needs auth.method aws-sigv4")
            }
            guard parts.parallel <= sync.concurrency else {
                throw ConfigurationError(
                    key: "api.upload.parts.parallel",
                    reason: "is \(parts.parallel), more than sync.concurrency (\(sync.concurrency)): one file's parts would take more requests at once than all uploads may"
                )
            }
        }
        try auth.readSecrets(credentials)
        try api.readRoutes(environment: environment, credentials: credentials)
    }
}

extension DaemonConfiguration.API {
    /// Sets ``routes``: `api.proxy`, else the environment's proxies, with the sign-in of
    /// `api.proxy-user` (its password read from its file or credential only when a proxy is
    /// there to sign in to); and `api.no-proxy`.
    mutating func readRoutes(environment: [String: String], credentials: CredentialReader) throws(ConfigurationError) {
        do {
            if let proxy {
                routes = ProxyRoutes(try HTTPProxy(url: proxy, credential: ""), bypass: NoProxy(noProxy))
            } else {
                routes = try ProxyRoutes(environment: environment)
                routes.bypass = NoProxy(routes.bypass.entries + noProxy)
            }
        } catch {
            throw ConfigurationError(key: "api.proxy", reason: proxy == nil ? "empty, so the environment's proxy is used, and \(error)" : error.description)
        }
        guard let user = proxyUser, !routes.isDirect else { return }
        let (secret, source) = try credentials.read(
            file: proxyPasswordFile,
            fileKey: "api.proxy-password-file",
            credential: "proxy-password",
            credentialKey: "api.proxy-user",
            what: "proxy password"
        )
        let credential = switch source {
        case .file(let path): "api.proxy-password-file, \(path)"
        case .credential(let name, _), .credentialSource(let name, _): "the credential \(name), \(DaemonConfiguration.Auth.credentialFile(name)) for errorbusd.service"
        case .given: "the proxy password"
        }
        for path in [\ProxyRoutes.https, \ProxyRoutes.http] where routes[keyPath: path] != nil {
            routes[keyPath: path]?.user = user
            routes[keyPath: path]?.password = secret.value
            routes[keyPath: path]?.credential = credential
        }
    }
}

// MARK: - Value types of single keys

extension ValueType where Value == String {
    /// An `http` or `https` URL with a host and no query, fragment or user info; a trailing `/`
    /// dropped (paths are appended to it).
    static var httpURL: Self {
        .scalar("URL") { text, key throws(ConfigurationError) in
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
            return text.hasSuffix("/") ? String(text.dropLast()) : text
        } format: { $0 }
    }

    /// An HTTP proxy's URL, `http://HOST[:PORT]`, without a sign-in (that is a credential).
    static var proxyURL: Self {
        .scalar("URL") { text, key throws(ConfigurationError) in
            do {
                let proxy = try HTTPProxy(url: text, credential: "")
                guard proxy.user == nil else {
                    throw ConfigurationError(
                        key: key,
                        reason: "expected a URL without user:password@: set api.proxy-user, and the password in api.proxy-password-file or the credential proxy-password"
                    )
                }
            } catch let error as InvalidProxyURL {
                throw ConfigurationError(key: key, reason: error.description)
            } catch let error as ConfigurationError {
                throw error
            } catch {
                throw ConfigurationError(key: key, reason: "\(error)")
            }
            return text
        } format: { $0 }
    }

    /// A path under the base URL: starts with `/`, no query or fragment.
    static var apiPath: Self {
        .scalar("path") { text, key throws(ConfigurationError) in
            guard text.hasPrefix("/"), !text.contains("?"), !text.contains("#"), !text.contains(" ") else {
                throw ConfigurationError(key: key, reason: "expected a path starting with / (without ?, # or spaces), got \"\(text)\"")
            }
            return text.count > 1 && text.hasSuffix("/") ? String(text.dropLast()) : text
        } format: { $0 }
    }

    /// A name for `LoadCredential=`, which stays inside the credentials directory.
    static var credentialName: Self {
        .scalar("text") { text, key throws(ConfigurationError) in
            guard SafeFileName.isSafe(text) else {
                throw ConfigurationError(key: key, reason: "expected \(SafeFileName.expectation), got \"\(text)\"")
            }
            return text
        } format: { $0 }
    }

    /// A portable group name, or a numeric gid.
    static var groupName: Self {
        .scalar("group") { text, key throws(ConfigurationError) in
            guard !text.hasPrefix("-"), text.utf8.count <= 256, text.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || "_-.".contains($0)) }) else {
                throw ConfigurationError(
                    key: key,
                    reason: "expected a group name (letters, digits, _, - and ., not starting with -), or nothing for root only, got \"\(text)\""
                )
            }
            return text
        } format: { $0 }
    }
}

extension ValueType where Value == DaemonConfiguration.Metrics.ListenAddress {
    static var listenAddress: Self {
        .scalar("HOST:PORT") { text, key throws(ConfigurationError) in
            guard let address = Value(parsing: text) else {
                throw ConfigurationError(
                    key: key,
                    reason: "expected HOST:PORT (127.0.0.1:9464, [::1]:9464, 0.0.0.0:9464, localhost:9464), or nothing for no listener, got \"\(text)\""
                )
            }
            return address
        } format: { $0.description }
    }
}

extension ValueType where Value == Bandwidth {
    /// `sync.bandwidth`: a rate, `off`, or a timetable.
    static var bandwidth: Self {
        .scalar("rate or timetable") { text, key throws(ConfigurationError) in
            switch Bandwidth.parse(text) {
            case .success(let bandwidth): return bandwidth
            case .failure(let error): throw ConfigurationError(key: key, reason: error.reason)
            }
        } format: { $0.description }
    }
}

// MARK: - Value types of lists

extension ValueType where Value == [String] {
    /// `api.no-proxy`: hosts, addresses, networks, as `no_proxy` lists them.
    static var noProxy: Self {
        .list("list of hosts") { entries, key throws(ConfigurationError) in
            for entry in entries where entry.isEmpty || entry.contains(where: { $0.isWhitespace || $0 == "," }) {
                throw ConfigurationError(key: key, reason: "expected one host, address or ADDRESS/BITS per item, got \"\(entry)\"")
            }
            return entries
        } format: { $0 }
    }
}

extension ValueType where Value == [ClassificationOverride] {
    /// `api.classify`: ``ClassificationOverride``s, none twice.
    static var classification: Self {
        .list("list of STATUS[ PROBLEM-TYPE]=CATEGORY") { entries, key throws(ConfigurationError) in
            var rules: [ClassificationOverride] = []
            for entry in entries {
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
        } format: { $0.map(\.description) }
    }
}

extension ValueType where Value == [DaemonConfiguration.Loader.Resource] {
    /// `loader.resources`: `NAME=INTERVAL` or `URL=INTERVAL`, none twice.
    static var resources: Self {
        .list("list of NAME=INTERVAL or URL=INTERVAL") { entries, key throws(ConfigurationError) in
            var resources: [DaemonConfiguration.Loader.Resource] = []
            for entry in entries {
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
                resources.append(.init(name: name, url: url, interval: interval))
            }
            return resources
        } format: { $0.map { "\($0.url ?? $0.name)=\(DurationText.exact($0.interval))" } }
    }
}
