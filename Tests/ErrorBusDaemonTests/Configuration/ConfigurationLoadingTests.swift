import Configuration
import ErrorBus
import ErrorBusDaemon
import ErrorBusHTTP
import Logging
import Testing

@Suite struct ConfigurationLoadingTests {
    /// The built-in defaults, with the secret a fixture's credentials directory holds.
    private static func defaults(_ fixture: ConfigurationFixture) -> DaemonConfiguration {
        fixture.defaults
    }

    @Test func defaultsWithoutFile() async throws {
        try await ConfigurationFixture.with { fixture in
            let configuration = try DaemonConfiguration.load(file: nil, environment: try fixture.credentials())
            #expect(configuration == Self.defaults(fixture))

            #expect(configuration.api.baseURL == "http://127.0.0.1:8080")
            #expect(configuration.api.host == "127.0.0.1")
            #expect(configuration.api.probeURL == "http://127.0.0.1:8080/healthz")
            #expect(configuration.api.tokenPath == "/oauth/token")
            #expect(configuration.api.connectTimeout == .seconds(5))
            #expect(configuration.auth.clientID == "errorbus")
            #expect(configuration.auth.refreshMargin == .seconds(60))
            #expect(configuration.sync.outbox == "/var/spool/errorbusd/outbox")
            #expect(configuration.sync.afterDelivery == .delete)
            #expect(configuration.sync.concurrency == 16)
            #expect(configuration.sync.maxFileSize == 100 * 1_024 * 1_024)
            #expect(configuration.loader.resources.isEmpty)
            #expect(configuration.state.directory == "/var/lib/errorbusd")
            #expect(configuration.shutdown.drainTimeout == .seconds(10))
            #expect(configuration.log.level == .info)
            #expect(configuration.control.socketPath == "/run/errorbusd/io.errorbus.Control")
            #expect(configuration.control.group == "errorbus")
            #expect(configuration.control.maxConnections == 256)
            #expect(configuration.bus.backoff == ErrorBusConfiguration.Backoff())
            #expect(configuration.bus.maxParkedJobs == ErrorBusConfiguration().maxParkedJobs)
        }
    }

    @Test func emptyFileIsAllDefaults() async throws {
        try await ConfigurationFixture.with { fixture in
            for yaml in ["", "# nothing but a comment\n", "api:\nsync:\n", "~\n"] {
                let configuration = try await fixture.load(yaml)
                #expect(configuration == Self.defaults(fixture), "\(yaml)")
            }
        }
    }

    @Test func yamlOverridesDefaults() async throws {
        try await ConfigurationFixture.with { fixture in
            let configuration = try await fixture.load(
                """
                api:
                  base-url: https://api.example.net/prefix/
                  token-path: /token
                  upload:
                    url: /items/{sha256}
                  resources-path: /res
                  realm: example
                  connect-timeout: 500ms
                  request-timeout: 2m
                  ca-file: /etc/ssl/extra.pem
                auth:
                  client-id: host-17
                  refresh-margin: 0.5
                sync:
                  outbox: /srv/outbox
                  after-delivery: move
                  sent-directory: /srv/sent
                  concurrency: 4
                  max-file-size: 10MiB
                  rescan-interval: 1m
                  settle-time: 0
                loader:
                  directory: /srv/resources
                  resources:
                    - motd.txt=5m
                    - feature-flags.json = 30s
                state:
                  directory: /srv/state
                shutdown:
                  drain-timeout: 1m30s
                log:
                  level: debug
                control:
                  socket-path: /run/eb.sock
                  group:
                  max-connections: 8
                bus:
                  backoff: {base: 2s, factor: 3, cap: 10m}
                  rate-limit: {minimum: 0, maximum: 2h, jitter: 0.25}
                  reachability: {initial-interval: 500ms, factor: 1.5, maximum-interval: 1m}
                  concurrency: {maximum: 4, initial: 2, decrease: 0.7, latency-tolerance: 3}
                  release: {spread: 1s}
                  retry-budget: {success-ratio: 0.2, floor-per-minute: 0.5, capacity: 50}
                  max-parked-jobs: 1_000
                  dead-letter-grouping-window: 5m
                  event-buffer-size: 64
                  resolved-incident-history: 0
                  grouping: per-job
                """
            )
            #expect(configuration.api.baseURL == "https://api.example.net/prefix")
            #expect(configuration.api.host == "api.example.net")
            #expect(configuration.api.probeURL == "https://api.example.net/prefix/healthz")
            #expect(configuration.api.tokenPath == "/token")
            #expect(configuration.api.uploadContract.url.description == "https://api.example.net/prefix/items/{sha256}")
            #expect(configuration.api.resourcesPath == "/res")
            #expect(configuration.api.realm == "example")
            #expect(configuration.api.connectTimeout == .milliseconds(500))
            #expect(configuration.api.requestTimeout == .seconds(120))
            #expect(configuration.api.caFile == "/etc/ssl/extra.pem")
            #expect(configuration.auth.clientID == "host-17")
            #expect(configuration.auth.refreshMargin == .milliseconds(500))
            #expect(configuration.sync.outbox == "/srv/outbox")
            #expect(configuration.sync.afterDelivery == .move(to: "/srv/sent"))
            #expect(configuration.sync.concurrency == 4)
            #expect(configuration.sync.maxFileSize == 10_485_760)
            #expect(configuration.sync.rescanInterval == .seconds(60))
            #expect(configuration.sync.settleTime == .zero)
            #expect(configuration.loader.directory == "/srv/resources")
            #expect(
                configuration.loader.resources == [
                    .init(name: "motd.txt", interval: .seconds(300)),
                    .init(name: "feature-flags.json", interval: .seconds(30)),
                ]
            )
            #expect(configuration.state.directory == "/srv/state")
            #expect(configuration.shutdown.drainTimeout == .seconds(90))
            #expect(configuration.log.level == .debug)
            #expect(configuration.control.socketPath == "/run/eb.sock")
            #expect(configuration.control.group == nil)
            #expect(configuration.control.maxConnections == 8)
            #expect(configuration.bus.backoff == .init(base: .seconds(2), factor: 3, cap: .seconds(600)))
            #expect(configuration.bus.rateLimit == .init(minimum: .zero, maximum: .seconds(7_200), jitter: 0.25))
            #expect(
                configuration.bus.reachability
                    == .init(initialInterval: .milliseconds(500), factor: 1.5, maximumInterval: .seconds(60))
            )
            #expect(configuration.bus.concurrency == .init(maximum: 4, initial: 2, decrease: 0.7, latencyTolerance: 3))
            #expect(configuration.bus.release == .init(spread: .seconds(1)))
            #expect(configuration.bus.retryBudget == .init(successRatio: 0.2, floorPerMinute: 0.5, capacity: 50))
            #expect(configuration.bus.maxParkedJobs == 1_000)
            #expect(configuration.bus.deadLetterGroupingWindow == .seconds(300))
            #expect(configuration.bus.eventBufferSize == 64)
            #expect(configuration.bus.resolvedIncidentHistory == 0)
            #expect(configuration.bus.grouping == .perJob)
        }
    }

    @Test func probeURLCanBeSetAndFollowsTheBaseURLOtherwise() async throws {
        try await ConfigurationFixture.with { fixture in
            let set = try await fixture.load("api:\n  probe-url: http://probe.example.net/up\n")
            #expect(set.api.probeURL == "http://probe.example.net/up")

            var api = DaemonConfiguration.API(baseURL: "https://a.example.net")
            #expect(api.probeURL == "https://a.example.net/healthz")
            api.probeURL = nil
            api.baseURL = "https://b.example.net"
            #expect(api.probeURL == "https://b.example.net/healthz")
            #expect(api == DaemonConfiguration.API(baseURL: "https://b.example.net", probeURL: "https://b.example.net/healthz"))
        }
    }

    /// `api.proxy` signs in with a password from its file or credential, never the YAML; unset,
    /// the environment's proxies are taken, with `api.no-proxy` added to theirs.
    @Test func theProxyAndItsSignInComeFromTheirKeysOrTheEnvironment() async throws {
        try await ConfigurationFixture.with { fixture in
            let passwordFile = try fixture.write("proxy-password", "pw from file\n")
            let yaml = "api:\n  proxy: http://proxy.corp:8080\n  proxy-user: fleet\n  proxy-password-file: \(passwordFile)\n  no-proxy: [.internal]\n"
            let configuration = try await fixture.load(yaml)
            let proxy = try #require(configuration.api.routes.proxy(for: "https://api.example.com/v1"))
            #expect(proxy.origin == "http://proxy.corp:8080" && proxy.user == "fleet" && proxy.password == "pw from file")
            #expect(proxy.credential.contains(passwordFile))
            #expect(configuration.api.routes.proxy(for: "https://files.internal/") == nil)

            _ = try fixture.credentials(secret: "pw from credential\n", name: "proxy-password")
            let credential = try await fixture.load("api:\n  proxy: http://proxy.corp:8080\n  proxy-user: fleet\n")
            #expect(credential.api.routes.https?.password == "pw from credential")
            #expect(credential.api.routes.https?.credential.contains("the credential proxy-password") == true)

            let environment = try await fixture.load(
                "api:\n  no-proxy: [files.internal]\n",
                environment: ["https_proxy": "http://envproxy:3128", "no_proxy": "localhost"]
            )
            #expect(environment.api.routes.proxy(for: "https://api.example.com/")?.host == "envproxy")
            #expect(environment.api.routes.proxy(for: "https://localhost/") == nil && environment.api.routes.proxy(for: "https://files.internal/") == nil)
            #expect(try await fixture.load("").api.routes.isDirect)

            let bad = try #require(try await fixture.loadError("", environment: ["https_proxy": "socks5://p:1080"]))
            #expect(bad.description.contains("api.proxy: empty, so the environment's proxy is used, and https_proxy: only an http:// proxy"), "\(bad)")
        }
    }

    @Test func environmentOverridesYAML() async throws {
        try await ConfigurationFixture.with { fixture in
            let configuration = try await fixture.load(
                """
                sync:
                  concurrency: 8
                  max-file-size: 1MiB
                api:
                  base-url: http://yaml.example.net
                """,
                environment: [
                    "ERRORBUSD_SYNC_CONCURRENCY": "32",
                    "ERRORBUSD_API_BASE_URL": "https://env.example.net",
                    "ERRORBUSD_BUS_RETRY_BUDGET_FLOOR_PER_MINUTE": "2.5",
                    "ERRORBUSD_LOADER_RESOURCES": "a.txt=1m, b.json=10s",
                    "ERRORBUSD_CONTROL_GROUP": "",
                    "PATH": "/usr/bin:/bin",
                ]
            )
            #expect(configuration.sync.concurrency == 32)
            #expect(configuration.sync.maxFileSize == 1_048_576)  // from the file, not overridden
            #expect(configuration.api.baseURL == "https://env.example.net")
            #expect(configuration.bus.retryBudget.floorPerMinute == 2.5)
            #expect(
                configuration.loader.resources == [
                    .init(name: "a.txt", interval: .seconds(60)), .init(name: "b.json", interval: .seconds(10)),
                ]
            )
            #expect(configuration.control.group == nil)
        }
    }

    @Test func environmentWithoutFile() async throws {
        try await ConfigurationFixture.with { fixture in
            var environment = try fixture.credentials()
            environment["ERRORBUSD_LOG_LEVEL"] = "warning"
            let configuration = try DaemonConfiguration.load(file: nil, environment: environment)
            var expected = Self.defaults(fixture)
            expected.log.level = .warning
            #expect(configuration == expected)
        }
    }

    @Test func systemdDirectoriesAreDefaults() async throws {
        try await ConfigurationFixture.with { fixture in
            var environment = try fixture.credentials()
            environment["STATE_DIRECTORY"] = "/var/lib/errorbusd-a:/var/lib/errorbusd-b"
            environment["RUNTIME_DIRECTORY"] = "/run/errorbusd-test"
            let configuration = try DaemonConfiguration.load(file: nil, environment: environment)
            #expect(configuration.state.directory == "/var/lib/errorbusd-a")
            #expect(configuration.control.socketPath == "/run/errorbusd-test/io.errorbus.Control")

            // Set explicitly, the file wins over systemd's directories.
            let file = try fixture.write(
                "errorbusd.yaml",
                "state:\n  directory: /srv/state\ncontrol:\n  socket-path: /srv/control.sock\n"
            )
            let explicit = try DaemonConfiguration.load(file: file, environment: environment)
            #expect(explicit.state.directory == "/srv/state")
            #expect(explicit.control.socketPath == "/srv/control.sock")
        }
    }

    @Test func secretFromCredentialsDirectory() async throws {
        try await ConfigurationFixture.with { fixture in
            let environment = try fixture.credentials(secret: "from-systemd\n", name: "api-secret")
            let file = try fixture.write("errorbusd.yaml", "auth:\n  credential-name: api-secret\n")
            let configuration = try DaemonConfiguration.load(file: file, environment: environment)
            #expect(configuration.auth.secret == Secret("from-systemd"))
            #expect(configuration.auth.secret.value == "from-systemd")
        }
    }

    @Test func secretFileWinsOverCredentialsDirectory() async throws {
        try await ConfigurationFixture.with { fixture in
            let secretFile = try fixture.write("secret", "from-file\r\n")
            let configuration = try await fixture.load("auth:\n  client-secret-file: \(secretFile)\n")
            #expect(configuration.auth.secretFiles[.clientSecret] == secretFile)
            #expect(configuration.auth.secret.value == "from-file")

            // Without any credentials directory too.
            let alone = try DaemonConfiguration.load(
                file: nil,
                environment: ["ERRORBUSD_AUTH_CLIENT_SECRET_FILE": secretFile]
            )
            #expect(alone.auth.secret.value == "from-file")
        }
    }

    @Test func secretIsRedacted() {
        let secret = Secret("hunter2")
        #expect(secret.description == "<redacted>")
        #expect(secret.debugDescription == "Secret(<redacted>)")
        #expect("\(secret)" == "<redacted>")
        #expect(String(reflecting: secret) == "Secret(<redacted>)")
        var dumped = ""
        dump(DaemonConfiguration(auth: .init(secret: secret)), to: &dumped)
        #expect(!dumped.contains("hunter2"))
        #expect(!String(describing: DaemonConfiguration(auth: .init(secret: secret))).contains("hunter2"))
    }

    @Test func readsTypedValuesFromAnyProvider() async throws {
        try await ConfigurationFixture.with { fixture in
            let reader = ConfigReader(
                provider: InMemoryProvider(values: [
                    "sync.concurrency": 12,
                    "bus.backoff.factor": 1.5,
                    "api.connect-timeout": 2,
                    "log.level": "error",
                ])
            )
            let configuration = try DaemonConfiguration(reader: reader, environment: try fixture.credentials())
            #expect(configuration.sync.concurrency == 12)
            #expect(configuration.bus.backoff.factor == 1.5)
            #expect(configuration.api.connectTimeout == .seconds(2))
            #expect(configuration.log.level == .error)
        }
    }

    /// log.target: auto follows $JOURNAL_STREAM, journal and stderr ignore it; the file sets it,
    /// ERRORBUSD_LOG_TARGET overrides the file, and anything else is refused.
    @Test func logTargetDecidesWhereEntriesGo() async throws {
        try await ConfigurationFixture.with { fixture in
            let byDefault = try await fixture.load("")
            #expect(byDefault.log.target == .auto)
            #expect(byDefault.log.destination(standardErrorIsJournal: true) == .journal)
            #expect(byDefault.log.destination(standardErrorIsJournal: false) == .standardError)

            let journal = try await fixture.load("log:\n  target: journal\n")
            #expect(journal.log.target == .journal)
            #expect(journal.log.destination(standardErrorIsJournal: false) == .journal)
            #expect(journal.log.destination(standardErrorIsJournal: true) == .journal)

            let overridden = try await fixture.load("log:\n  target: journal\n", environment: ["ERRORBUSD_LOG_TARGET": "stderr"])
            #expect(overridden.log.target == .stderr)
            #expect(overridden.log.destination(standardErrorIsJournal: true) == .standardError)

            let error = try await fixture.loadError("log:\n  target: syslog\n")
            #expect(error?.key == "log.target")
            #expect(error?.reason == #"expected one of auto, journal, stderr, got "syslog""#, "\(String(describing: error))")
        }
    }
}
