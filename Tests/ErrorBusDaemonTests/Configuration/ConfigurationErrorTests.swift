@testable import ErrorBusDaemon
import ErrorBusSupport
import Glibc
import Foundation
import Testing

/// Every kind of bad configuration is one line naming the file (and line) or the variable, the
/// key, and the reason.
@Suite struct ConfigurationErrorTests {
    @Test func exitCodeIsEXConfig() {
        #expect(ConfigurationError.exitCode == 78)
    }

    @Test func descriptionShapes() {
        #expect(
            ConfigurationError(file: "/etc/errorbusd/errorbusd.yaml", key: "sync.concurrency", reason: "bad").description
                == "/etc/errorbusd/errorbusd.yaml: sync.concurrency: bad"
        )
        #expect(
            ConfigurationError(file: "/e.yaml", line: 3, key: "sync.concurrency", reason: "bad").description
                == "/e.yaml:3: sync.concurrency: bad"
        )
        #expect(
            ConfigurationError(key: "sync.concurrency", environmentVariable: "ERRORBUSD_SYNC_CONCURRENCY", reason: "bad").description
                == "environment variable ERRORBUSD_SYNC_CONCURRENCY (sync.concurrency): bad"
        )
        #expect(ConfigurationError(key: "a.b", reason: "bad").description == "a.b: bad")
        #expect(ConfigurationError(reason: "bad").description == "bad")
        // A multi-line value (a YAML block scalar) quoted in the reason stays on one line.
        #expect(
            ConfigurationError(file: "/e.yaml", line: 3, key: "bus", reason: "got \"a\nb\r\u{7}\tc\"").description
                == "/e.yaml:3: bus: got \"a\\nb\\r\\u{7}\tc\""
        )
    }

    // MARK: - The file

    @Test func missingFile() async throws {
        try await ConfigurationFixture.with { fixture in
            let path = fixture.directory + "/missing.yaml"
            let error = try #require(await loadError(file: path, environment: try fixture.credentials()))
            #expect(error.file == path)
            #expect(error.key == nil)
            #expect(error.description == "\(path): cannot read: No such file or directory")
        }
    }

    @Test func fileThatIsADirectory() async throws {
        try await ConfigurationFixture.with { fixture in
            let error = try #require(await loadError(file: fixture.directory, environment: try fixture.credentials()))
            #expect(error.description == "\(fixture.directory): cannot read: is a directory, not a file")
        }
    }

    @Test func yamlSyntaxErrorHasTheLine() async throws {
        try await ConfigurationFixture.with { fixture in
            let error = try #require(
                try await fixture.loadError(
                    """
                    api:
                      base-url: http://127.0.0.1:8080
                    sync:
                      concurrency: [16
                    log:
                      level: info
                    """
                )
            )
            #expect(error.file == fixture.yamlPath)
            #expect(error.line != nil)
            #expect(error.description.hasPrefix("\(fixture.yamlPath):\(error.line!): not valid YAML: "))
        }
    }

    @Test func tabIndentation() async throws {
        try await ConfigurationFixture.with { fixture in
            let error = try #require(try await fixture.loadError("sync:\n\tconcurrency: 4\n"))
            #expect(error.line == 2)
            #expect(error.reason.hasSuffix("; YAML is indented with spaces, not tabs"))
        }
    }

    @Test func duplicateKeys() async throws {
        try await ConfigurationFixture.with { fixture in
            let error = try #require(try await fixture.loadError("sync:\n  concurrency: 4\n  concurrency: 8\n"))
            #expect(error.description.hasPrefix(fixture.yamlPath + ":"))
            #expect(error.reason.contains("\"concurrency\" set twice"))
        }
    }

    @Test func topLevelMustBeAMapping() async throws {
        try await ConfigurationFixture.with { fixture in
            let error = try #require(try await fixture.loadError("- api\n- sync\n"))
            #expect(error.description == "\(fixture.yamlPath):1: expected a mapping of sections (api:, auth:, sync:, …) at the top level, got a list")
        }
    }

    // MARK: - Keys

    @Test func unknownKeyWithSuggestion() async throws {
        try await ConfigurationFixture.with { fixture in
            let typo = try #require(try await fixture.loadError("sync:\n  outbox: /srv/outbox\n  concurency: 4\n"))
            #expect(typo.description == "\(fixture.yamlPath):3: sync.concurency: unknown key; did you mean sync.concurrency?")

            let camel = try #require(try await fixture.loadError("api:\n  baseURL: http://h\n"))
            #expect(camel.description == "\(fixture.yamlPath):2: api.baseURL: unknown key; did you mean api.base-url?")

            let snake = try #require(try await fixture.loadError("bus:\n  retry_budget:\n    capacity: 5\n"))
            #expect(snake.description == "\(fixture.yamlPath):2: bus.retry_budget: unknown key; did you mean bus.retry-budget?")

            let elsewhere = try #require(try await fixture.loadError("sync:\n  client-id: x\n"))
            #expect(elsewhere.description == "\(fixture.yamlPath):2: sync.client-id: unknown key; did you mean auth.client-id?")
        }
    }

    @Test func unknownKeyWithoutSuggestionListsTheKnownOnes() async throws {
        try await ConfigurationFixture.with { fixture in
            let error = try #require(try await fixture.loadError("frobnicate: 1\n"))
            #expect(
                error.description
                    == "\(fixture.yamlPath):1: frobnicate: unknown key; known at the top level: api, auth, sync, loader, state, shutdown, log, control, health, metrics, bus"
            )
        }
    }

    @Test func dottedKeysAreExplained() async throws {
        try await ConfigurationFixture.with { fixture in
            let error = try #require(try await fixture.loadError("sync.concurrency: 4\n"))
            #expect(
                error.description
                    == "\(fixture.yamlPath):1: sync.concurrency: unknown key; YAML keys nest rather than contain dots: write it one level per key (sync:, concurrency:)"
            )
        }
    }

    @Test func clientSecretInTheFileIsRefused() async throws {
        try await ConfigurationFixture.with { fixture in
            let error = try #require(try await fixture.loadError("auth:\n  client-id: x\n  client-secret: hunter2\n"))
            #expect(error.file == fixture.yamlPath)
            #expect(error.line == 3)
            #expect(error.key == "auth.client-secret")
            #expect(error.reason.contains("auth.client-secret-file"))
            #expect(error.reason.contains("LoadCredential="))
            #expect(!error.description.contains("hunter2"))
        }
    }

    @Test func shapeErrors() async throws {
        try await ConfigurationFixture.with { fixture in
            let section = try #require(try await fixture.loadError("api: http://127.0.0.1:8080\n"))
            #expect(section.description.hasPrefix("\(fixture.yamlPath):1: api: expected a section with keys (base-url, token-path,"))

            let list = try #require(try await fixture.loadError("sync:\n  concurrency: [1, 2]\n"))
            #expect(list.description == "\(fixture.yamlPath):2: sync.concurrency: expected a single value, got a list")

            let empty = try #require(try await fixture.loadError("sync:\n  concurrency:\n"))
            #expect(empty.description == "\(fixture.yamlPath):2: sync.concurrency: has no value; remove the key to use the default")

            let notAList = try #require(try await fixture.loadError("loader:\n  resources: {motd.txt: 5m}\n"))
            #expect(notAList.description == "\(fixture.yamlPath):2: loader.resources: expected a list, got a mapping")
        }
    }

    // MARK: - Values

    @Test func wrongType() async throws {
        try await ConfigurationFixture.with { fixture in
            let error = try #require(try await fixture.loadError("sync:\n  outbox: /srv/outbox\n  concurrency: sixteen\n"))
            #expect(error.file == fixture.yamlPath)
            #expect(error.line == 3)
            #expect(error.key == "sync.concurrency")
            #expect(
                error.description
                    == "\(fixture.yamlPath):3: sync.concurrency: expected an integer between 1 and 1024, got \"sixteen\""
            )
        }
    }

    @Test(arguments: [
        ("sync:\n  concurrency: 0\n", "sync.concurrency: expected an integer between 1 and 1024, got \"0\""),
        ("bus:\n  rate-limit:\n    jitter: 1.5\n", "bus.rate-limit.jitter: expected a number between 0 and 1, got \"1.5\""),
        ("bus:\n  backoff:\n    factor: 0.5\n", "bus.backoff.factor: expected a number between 1 and 100, got \"0.5\""),
        ("bus:\n  retry-budget:\n    floor-per-minute: 0\n", "bus.retry-budget.floor-per-minute: expected a number greater than 0, got \"0\""),
        ("api:\n  connect-timeout: 0s\n", "api.connect-timeout: expected a duration greater than 0s, got \"0s\""),
        ("api:\n  request-timeout: soon\n", "api.request-timeout: expected a duration (seconds, or a number with a unit: 500ms, 30s, 5m, 1h), got \"soon\""),
        ("sync:\n  max-file-size: lots\n", "sync.max-file-size: expected a size in bytes (a whole number, or with a unit: 512KiB, 10MiB, 1GiB), got \"lots\""),
        ("log:\n  level: loud\n", "log.level: expected one of trace, debug, info, notice, warning, error, critical, got \"loud\""),
        ("sync:\n  after-delivery: keep\n", "sync.after-delivery: expected one of delete, move, got \"keep\""),
        ("api:\n  base-url: ftp://example.net\n", "api.base-url: expected an http:// or https:// URL, got \"ftp://example.net\""),
        ("api:\n  base-url: http://\n", "api.base-url: expected a URL with a host, got \"http://\""),
        ("api:\n  upload:\n    url: v1/items/{sha256}\n", "api.upload.url: expected a path starting with / or an http(s) URL with a host (no user:password@ or #fragment), got \"v1/items/{sha256}\""),
        ("api:\n  upload:\n    url: /v1/items/{id}\n", "api.upload.url: \"/v1/items/{id}\": unknown placeholder {id}; expected {sha256}, {sha256-base64}, {name}, {size}, {year}, {month}, {day}, {hour} or {hostname}"),
        ("api:\n  upload:\n    url: /v1/items/{sha256\n", "api.upload.url: \"/v1/items/{sha256\": a { without its }"),
        ("api:\n  upload:\n    method: PATCH\n", "api.upload.method: expected one of put, post, got \"PATCH\""),
        ("api:\n  upload:\n    method: POST\n    body: multipart\n", "api.upload.body: multipart needs api.upload.multipart-field, the form field the API reads the file from (file, upload, …)"),
        ("api:\n  upload:\n    multipart-field: file\n", "api.upload.multipart-field: is set to \"file\" but api.upload.body is raw; set api.upload.body: multipart or remove it"),
        ("api:\n  upload:\n    headers: [\"Authorization: Bearer x\"]\n", "api.upload.headers: Authorization is errorbusd's to send (auth.method, api.upload.body and idempotency-header set it)"),
        ("api:\n  upload:\n    headers: [\"X-Tenant\"]\n", "api.upload.headers: expected NAME: VALUE (X-Tenant: acme), got \"X-Tenant\""),
        ("api:\n  upload:\n    headers: [\"X-Path: {path}\"]\n", "api.upload.headers: X-Path: unknown placeholder {path}; expected {sha256}, {sha256-base64}, {name}, {size}, {year}, {month}, {day}, {hour} or {hostname}"),
        ("api:\n  upload:\n    headers: [\"X-Two: a\\r\\nInjected: b\"]\n", "api.upload.headers: X-Two: a header value cannot hold a line break or another control character (nor can a credential it names)"),
        ("api:\n  upload:\n    url: /dav/latest\n", "api.upload.url: \"/dav/latest\": a PUT to it would put every file at one URL; include {sha256} or {name}"),
        ("api:\n  upload:\n    url: https://{name}/u\n", "api.upload.url: \"https://{name}/u\": a placeholder before the path would let a file's name or content choose the host; put placeholders in the path or query"),
        ("api:\n  upload:\n    idempotency-header: Content-Length\n", "api.upload.idempotency-header: Content-Length is errorbusd's to send otherwise; name another header, or none"),
        ("api:\n  upload:\n    headers: [\"X-Key: a\"]\n    idempotency-header: x-key\n", "api.upload.idempotency-header: x-key is also in api.upload.headers: it would be sent twice"),
        ("api:\n  upload:\n    headers: [\"X-Key: a\", \"x-key: b\"]\n", "api.upload.headers: x-key is listed twice"),
        ("auth:\n  method: mtls\n", "auth.method: mtls signs in with a TLS client certificate, so api.base-url must be https://, got \"http://127.0.0.1:8080\""),
        ("api:\n  upload:\n    delivered: [201, 302]\n", "api.upload.delivered: expected 2xx or statuses from 200 to 299 (201, 204), got \"302\""),
        ("api:\n  upload:\n    receipt:\n      json-pointer: sha256\n", "api.upload.receipt.json-pointer: expected a JSON pointer (RFC 6901) such as /sha256 or /item/digest, got \"sha256\""),
        ("api:\n  upload:\n    receipt:\n      value: \"{sha256}\"\n", "api.upload.receipt.value: is set to \"{sha256}\" without api.upload.receipt.header to compare it with"),
        ("auth:\n  method: kerberos\n", "auth.method: expected one of oauth2-client-credentials, bearer, basic, mtls, aws-sigv4, none, got \"kerberos\""),
        ("api:\n  upload:\n    parts:\n      above: 64MiB\n", "api.upload.parts.above: uploads in parts speak S3's multipart protocol, which needs auth.method aws-sigv4"),
        (
            "api:\n  upload:\n    parts:\n      above: 64MiB\n      parallel: 8\nauth:\n  method: aws-sigv4\n  access-key-id: AKIAEXAMPLE\n  region: us-east-1\nsync:\n  concurrency: 4\n",
            "api.upload.parts.parallel: is 8, more than sync.concurrency (4): one file's parts would take more requests at once than all uploads may"
        ),
        ("api:\n  upload:\n    parts:\n      above: 64MiB\n      size: 1MiB\n", "api.upload.parts.size: expected a size between 5MiB and 5GiB, got \"1MiB\""),
        ("auth:\n  method: aws-sigv4\n  region: us-east-1\n", "auth.method: aws-sigv4 needs auth.access-key-id, the access key requests are signed with"),
        ("auth:\n  method: aws-sigv4\n  access-key-id: AKIAEXAMPLE\n", "auth.method: aws-sigv4 needs auth.region, the region requests are signed for (us-east-1 where the store has none)"),
        ("auth:\n  method: aws-sigv4\n  access-key-id: AKIAEXAMPLE\n  region: EU Central\n", "auth.region: expected lowercase letters, digits, '-' or '_' (eu-central-1, s3), got \"EU Central\""),
        ("auth:\n  method: aws-sigv4\n  access-key-id: AKIA/EXAMPLE\n  region: us-east-1\n", "auth.access-key-id: expected printable characters without '/', ',' or spaces, got \"AKIA/EXAMPLE\""),
        ("auth:\n  method: basic\n", "auth.method: basic needs auth.user, the user name the API knows"),
        ("api:\n  proxy: http://fleet:pw@proxy:3128\n", "api.proxy: expected a URL without user:password@: set api.proxy-user, and the password in api.proxy-password-file or the credential proxy-password"),
        ("api:\n  proxy: https://proxy:3128\n", "api.proxy: only an http:// proxy is supported (https:// goes through it with CONNECT), got \"https://proxy:3128\""),
        ("api:\n  proxy: http://proxy:3128\n  proxy-user: \"a:b\"\n", "api.proxy-user: expected a user name without ':' or a line break, got \"a:b\""),
        ("api:\n  no-proxy: [\"a.example, b.example\"]\n", "api.no-proxy: expected one host, address or ADDRESS/BITS per item, got \"a.example, b.example\""),
        ("loader:\n  resources:\n    - ../etc/passwd=5m\n", "loader.resources: expected a resource name of letters, digits, '.', '_' and '-', not starting with '.', got \"../etc/passwd\""),
        ("loader:\n  resources:\n    - motd.txt=500ms\n", "loader.resources: motd.txt: expected an interval of at least 1s, got \"500ms\""),
        ("loader:\n  resources:\n    - motd.txt\n", "loader.resources: expected NAME=INTERVAL (motd.txt=5m) or URL=INTERVAL, got \"motd.txt\""),
        ("loader:\n  resources:\n    - https://cdn.test/=5m\n", "loader.resources: https://cdn.test/: the URL's last path segment names the local copy, so it must be letters, digits, '.', '_' and '-', not starting with '.', got \"\""),
        ("loader:\n  resources: [a=1m, a=2m]\n", "loader.resources: a is listed twice"),
        ("control:\n  group: \"wheel users\"\n", "control.group: expected a group name (letters, digits, _, - and ., not starting with -), or nothing for root only, got \"wheel users\""),
        ("auth:\n  credential-name: ../secret\n", "auth.credential-name: expected letters, digits, '.', '_' and '-', not starting with '.', got \"../secret\""),
    ])
    func outOfRangeOrMalformed(yaml: String, expected: String) async throws {
        try await ConfigurationFixture.with { fixture in
            let error = try #require(try await fixture.loadError(yaml))
            #expect(error.file == fixture.yamlPath)
            #expect(error.line != nil)
            #expect(error.description.hasSuffix(": " + expected))
            #expect(error.description.hasPrefix(fixture.yamlPath + ":"))
        }
    }

    @Test func crossKeyChecksBlameTheKeyThatWasSet() async throws {
        try await ConfigurationFixture.with { fixture in
            let cap = try #require(try await fixture.loadError("bus:\n  backoff:\n    cap: 500ms\n"))
            #expect(cap.description == "\(fixture.yamlPath):3: bus.backoff.cap: must be at least bus.backoff.base (1s), got \"500ms\"")

            let base = try #require(try await fixture.loadError("bus:\n  backoff:\n    base: 10m\n"))
            #expect(base.description == "\(fixture.yamlPath):3: bus.backoff.base: must be at most bus.backoff.cap (2s), got \"10m\"")

            let sent = try #require(
                try await fixture.loadError("sync:\n  outbox: /srv/spool\n  after-delivery: move\n  sent-directory: /srv/spool/\n")
            )
            #expect(sent.description.hasPrefix("\(fixture.yamlPath):4: sync.sent-directory: must differ from sync.outbox"))
        }
    }

    /// A delivered file is renamed into the sent directory: across file systems that fails
    /// (EXDEV) for every file, so such a configuration is refused where both directories exist.
    @Test(.enabled(if: FileManager.default.fileExists(atPath: "/dev/shm"), "no tmpfs at /dev/shm"))
    func aSentDirectoryOnAnotherFileSystemThanTheOutboxIsRefused() async throws {
        var template = Array("/dev/shm/errorbus-sent-XXXXXX".utf8CString)
        let sent = String(cString: try #require(mkdtemp(&template)))
        defer { try? FileManager.default.removeItem(atPath: sent) }
        try await ConfigurationFixture.with { fixture in
            let outbox = fixture.directory + "/outbox"
            try FileManager.default.createDirectory(atPath: outbox, withIntermediateDirectories: true)
            try #require(try SystemCall.fileSystem(of: outbox) != SystemCall.fileSystem(of: sent), "\(outbox) and \(sent) are on one file system")
            let error = try #require(
                try await fixture.loadError("sync:\n  outbox: \(outbox)\n  after-delivery: move\n  sent-directory: \(sent)\n")
            )
            #expect(error.description == "\(fixture.yamlPath):4: sync.sent-directory: must be on the file system of sync.outbox (\(outbox)): a delivered file is renamed into it, which cannot cross file systems, so every delivered file would stay in the outbox")
            // On the outbox's file system, it loads.
            let beside = fixture.directory + "/sent"
            try FileManager.default.createDirectory(atPath: beside, withIntermediateDirectories: true)
            #expect(try await fixture.loadError("sync:\n  outbox: \(outbox)\n  after-delivery: move\n  sent-directory: \(beside)\n") == nil)
        }
    }

    @Test func relativePaths() async throws {
        try await ConfigurationFixture.with { fixture in
            let error = try #require(try await fixture.loadError("sync:\n  outbox: spool/outbox\n"))
            #expect(
                error.description
                    == "\(fixture.yamlPath):2: sync.outbox: expected an absolute path (starting with /), got \"spool/outbox\""
            )
            let secretFile = try #require(try await fixture.loadError("auth:\n  client-secret-file: secret\n"))
            #expect(secretFile.description.hasSuffix("auth.client-secret-file: expected an absolute path (starting with /), got \"secret\""))
        }
    }

    @Test func socketPathTooLong() async throws {
        try await ConfigurationFixture.with { fixture in
            let path = "/run/" + String(repeating: "x", count: 120)
            let error = try #require(try await fixture.loadError("control:\n  socket-path: \(path)\n"))
            #expect(error.description == "\(fixture.yamlPath):2: control.socket-path: is 125 bytes long; a Unix socket path holds at most 107")
        }
    }

    // MARK: - The environment

    @Test func badEnvironmentOverrideNamesTheVariable() async throws {
        try await ConfigurationFixture.with { fixture in
            let error = try #require(
                try await fixture.loadError("sync:\n  concurrency: 4\n", environment: ["ERRORBUSD_SYNC_CONCURRENCY": "sixteen"])
            )
            #expect(error.environmentVariable == "ERRORBUSD_SYNC_CONCURRENCY")
            #expect(error.file == nil)
            #expect(error.key == "sync.concurrency")
            #expect(
                error.description
                    == "environment variable ERRORBUSD_SYNC_CONCURRENCY (sync.concurrency): expected an integer between 1 and 1024, got \"sixteen\""
            )
        }
    }

    @Test func unknownEnvironmentVariable() async throws {
        try await ConfigurationFixture.with { fixture in
            let typo = try #require(try await fixture.loadError(nil, environment: ["ERRORBUSD_SYNC_CONCURENCY": "4"]))
            #expect(
                typo.description
                    == "environment variable ERRORBUSD_SYNC_CONCURENCY: not a configuration variable; did you mean ERRORBUSD_SYNC_CONCURRENCY?"
            )
            let secret = try #require(try await fixture.loadError(nil, environment: ["ERRORBUSD_AUTH_CLIENT_SECRET": "hunter2"]))
            #expect(secret.description.hasPrefix("environment variable ERRORBUSD_AUTH_CLIENT_SECRET (auth.client-secret): the client secret is never read"))
            #expect(!secret.description.contains("hunter2"))
        }
    }

    @Test func relativeSystemdDirectory() async throws {
        try await ConfigurationFixture.with { fixture in
            let error = try #require(try await fixture.loadError(nil, environment: ["STATE_DIRECTORY": "errorbusd"]))
            #expect(error.description == "environment variable STATE_DIRECTORY: expected an absolute path, got \"errorbusd\"")
        }
    }

    // MARK: - The secret

    @Test func noSecretAnywhere() async throws {
        let error = try #require(await loadError(file: nil, environment: [:]))
        #expect(error.key == "auth.client-secret-file")
        #expect(
            error.description
                == "auth.client-secret-file: no client secret: set auth.client-secret-file, or run errorbusd under systemd with LoadCredential=client-secret:PATH ($CREDENTIALS_DIRECTORY is not set)"
        )
    }

    @Test func missingCredentialNamesThePathTried() async throws {
        try await ConfigurationFixture.with { fixture in
            let directory = fixture.directory + "/credentials-empty"
            let error = try #require(await loadError(file: nil, environment: ["CREDENTIALS_DIRECTORY": directory]))
            #expect(
                error.description
                    == "auth.credential-name: cannot read the credential \(directory)/client-secret ($CREDENTIALS_DIRECTORY/client-secret): No such file or directory; does the unit have LoadCredential=client-secret:PATH?"
            )
        }
    }

    @Test func missingSecretFileNamesThePathAndWhereItWasSet() async throws {
        try await ConfigurationFixture.with { fixture in
            let path = fixture.directory + "/no-such-secret"
            let error = try #require(try await fixture.loadError("auth:\n  client-secret-file: \(path)\n"))
            #expect(
                error.description
                    == "\(fixture.yamlPath):2: auth.client-secret-file: cannot read the client secret file \(path): No such file or directory"
            )
        }
    }

    @Test func emptySecret() async throws {
        try await ConfigurationFixture.with { fixture in
            let path = try fixture.write("empty-secret", "\n")
            let error = try #require(await loadError(file: nil, environment: ["ERRORBUSD_AUTH_CLIENT_SECRET_FILE": path]))
            #expect(
                error.description
                    == "environment variable ERRORBUSD_AUTH_CLIENT_SECRET_FILE (auth.client-secret-file): the client secret file \(path) is empty"
            )
        }
    }

    @Test func anEmptyCredentialSaysWhichFileToCreateAndToRestart() async throws {
        try await ConfigurationFixture.with { fixture in
            // What errorbusd.service's SetCredential=client-secret: hands over when
            // /etc/errorbusd/client-secret is missing.
            let directory = fixture.directory + "/credentials"
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
            try "".write(toFile: directory + "/client-secret", atomically: true, encoding: .utf8)
            let error = try #require(await loadError(file: nil, environment: ["CREDENTIALS_DIRECTORY": directory]))
            #expect(error.key == "auth.credential-name")
            #expect(error.reason.contains("/etc/errorbusd/client-secret"), "\(error)")
            #expect(error.reason.contains("systemctl restart errorbusd"), "\(error)")
        }
    }

    @Test func aCheckOutsideTheServiceReadsTheSecretWhereTheUnitLoadsIt() async throws {
        try await ConfigurationFixture.with { fixture in
            let source = fixture.directory + "/etc"
            try FileManager.default.createDirectory(atPath: source, withIntermediateDirectories: true)
            // Missing: the error names the file and what to put there.
            let missing = try #require(await loadError(file: nil, environment: [:], credentialSource: source))
            #expect(missing.key == "auth.credential-name")
            #expect(missing.reason.contains("\(source)/client-secret, which errorbusd.service loads as its credential"), "\(missing)")
            // Present: the configuration loads, and says where the secret came from.
            try "s3cret\n".write(toFile: source + "/client-secret", atomically: true, encoding: .utf8)
            let loaded = try DaemonConfiguration.load(file: nil, environment: [:], credentialSource: source)
            #expect(loaded.auth.secret.value == "s3cret")
            #expect(loaded.auth.secretSource == .credentialSource(name: "client-secret", path: source + "/client-secret"))
            // $CREDENTIALS_DIRECTORY, when set, wins: inside the service the copy is what counts.
            let credentials = fixture.directory + "/credentials"
            try FileManager.default.createDirectory(atPath: credentials, withIntermediateDirectories: true)
            try "other".write(toFile: credentials + "/client-secret", atomically: true, encoding: .utf8)
            let inService = try DaemonConfiguration.load(file: nil, environment: ["CREDENTIALS_DIRECTORY": credentials], credentialSource: source)
            #expect(inService.auth.secret.value == "other")
        }
    }

    @Test func theFixForARefusedSecretIsTheOneThatWorksWhereItCameFrom() {
        typealias Source = DaemonConfiguration.Auth.SecretSource
        let credential = Source.credential(name: "client-secret", path: "/run/credentials/errorbusd.service/client-secret").fix()
        #expect(credential.contains("systemctl restart errorbusd"))
        #expect(credential.contains("/etc/errorbusd/client-secret"))
        #expect(!credential.contains("then reload"))
        let file = Source.file("/etc/errorbusd/secret").fix()
        #expect(file.contains("/etc/errorbusd/secret, then reload errorbusd"))
    }

    private func loadError(file: String?, environment: [String: String], credentialSource: String? = nil) async -> ConfigurationError? {
        do {
            _ = try DaemonConfiguration.load(file: file, environment: environment, credentialSource: credentialSource)
            return nil
        } catch {
            return error
        }
    }
}

/// The upload contract and the sign-in methods: what `--check-config` refuses, naming the key.
@Suite struct ContractConfigurationTests {
    @Test func theItemsPathOfOldConfigurationsSaysWhatReplacedIt() async throws {
        try await ConfigurationFixture.with { fixture in
            let error = try #require(try await fixture.loadError("api:\n  items-path: /v1/items\n"))
            #expect(error.key == "api.items-path")
            #expect(error.line == 2)
            #expect(error.reason.contains("api.upload.url") && error.reason.contains("/v1/items/{sha256}"))
        }
    }

    @Test func mtlsWithoutAKeyNamesTheKeysKey() async throws {
        try await ConfigurationFixture.with { fixture in
            let certificate = try fixture.write("client.pem", "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n")
            let error = try #require(try await fixture.loadError("api:\n  base-url: https://api.test\nauth:\n  method: mtls\n  client-certificate-file: \(certificate)\n"))
            #expect(error.key == "auth.client-key-file")
            #expect(error.reason.contains("client-key"), "\(error)")
        }
    }

    @Test func mtlsWithAKeyThatIsNotTheCertificatesIsRefused() async throws {
        let scratch = try ScratchDirectory("mtls-mismatch")
        let certificates = try await TestCertificates.make(in: scratch)
        try await ConfigurationFixture.with { fixture in
            let error = try #require(
                try await fixture.loadError(
                    "api:\n  base-url: https://api.test\nauth:\n  method: mtls\n  client-certificate-file: \(certificates.clientCertificate)\n  client-key-file: \(certificates.strangerKey)\n"
                )
            )
            #expect(error.key == "auth.client-key-file")
            #expect(error.reason.contains("does not go with the client certificate"), "\(error)")
        }
    }

    @Test func aTokenWithALineBreakIsRefused() async throws {
        try await ConfigurationFixture.with { fixture in
            let token = try fixture.write("token", "line one\nline two\n")
            let error = try #require(try await fixture.loadError("auth:\n  method: bearer\n  token-file: \(token)\n"))
            #expect(error.key == "auth.token-file")
            #expect(error.reason.contains("line break"))
        }
    }

    @Test func mtlsWithAnUnusableCertificateOrKeySaysWhich() async throws {
        try await ConfigurationFixture.with { fixture in
            let garbage = try fixture.write("garbage.pem", "not a certificate\n")
            let certificateError = try #require(
                try await fixture.loadError("api:\n  base-url: https://api.test\nauth:\n  method: mtls\n  client-certificate-file: \(garbage)\n  client-key-file: \(garbage)\n")
            )
            #expect(certificateError.key == "auth.client-certificate-file")
            #expect(certificateError.reason.contains("not a PEM certificate"))
        }
    }

    @Test func aMethodReadsOnlyItsOwnSecret() async throws {
        try await ConfigurationFixture.with { fixture in
            let token = try fixture.write("token", "t0ken\n")
            // No client secret anywhere: bearer does not need one.
            let configuration = try DaemonConfiguration.load(
                file: try fixture.write("errorbusd.yaml", "auth:\n  method: bearer\n  token-file: \(token)\n"),
                environment: [:]
            )
            #expect(configuration.auth.method == .bearer)
            #expect(configuration.auth.secret.value == "t0ken")
            #expect(configuration.auth.secretSource == .file(token))

            let missing = try #require(try await fixture.loadError("auth:\n  method: bearer\n"))
            #expect(missing.key == "auth.token-file")
            #expect(missing.reason.contains("LoadCredential=token:PATH"), "\(missing)")
        }
    }

    @Test func aHeaderTakesItsValueFromACredentialThatNeverShows() async throws {
        try await ConfigurationFixture.with { fixture in
            try fixture.write("credentials/api-key", "k3y-value\n")
            let configuration = try await fixture.load(
                """
                api:
                  upload:
                    method: POST
                    url: https://upload.example.net/files?name={name}
                    body: multipart
                    multipart-field: upload
                    headers:
                      - "X-Api-Key: {credential:api-key}"
                      - "X-Checksum: sha-256={sha256-base64}"
                    idempotency-header:
                    delivered: [201, 204]
                    receipt:
                      header: ETag
                      value: "\\"{sha256}\\""
                """
            )
            let contract = configuration.api.uploadContract
            #expect(contract.method == .post)
            #expect(contract.body == .multipart(field: "upload"))
            #expect(contract.idempotencyHeader == nil)
            #expect(contract.delivered.contains(204) && !contract.delivered.contains(200))
            #expect(configuration.api.uploadOrigin == "https://upload.example.net")
            let item = UploadItem(sha256: String(repeating: "ab", count: 32), name: "a b\"c.txt", size: 3)
            #expect(contract.url.render(item) == "https://upload.example.net/files?name=a%20b%22c.txt")
            #expect(contract.headers.map(\.name) == ["X-Api-Key", "X-Checksum"])
            #expect(contract.headers[0].value.render(item) == "k3y-value")
            #expect(contract.headers[1].value.render(item) == "sha-256=q6urq6urq6urq6urq6urq6urq6urq6urq6urq6urq6s=")
            #expect(!String(describing: configuration).contains("k3y-value"))
            #expect(contract.receipt == .header(name: "ETag", value: try UploadTemplate.parse("\"{sha256}\"")))

            let missing = try #require(try await fixture.loadError("api:\n  upload:\n    headers: [\"X-Api-Key: {credential:nope}\"]\n"))
            #expect(missing.key == "api.upload.headers")
            #expect(missing.reason.contains("X-Api-Key") && missing.reason.contains("nope"), "\(missing)")
        }
    }

    @Test func aResourceMayBeAWholeURLSignedInOnlyOnTheAPIsOrigin() async throws {
        try await ConfigurationFixture.with { fixture in
            let configuration = try await fixture.load(
                """
                api:
                  base-url: https://api.example.net
                loader:
                  resources:
                    - motd.txt=5m
                    - https://cdn.example.org/v2/flags.json?env=prod=30s
                    - https://api.example.net/other/plan.json=1m
                """
            )
            let settings = LoaderService.Settings(configuration)
            #expect(settings.resources.map(\.name) == ["motd.txt", "flags.json", "plan.json"])
            #expect(settings.resources.map(\.url) == [
                "https://api.example.net/v1/resources/motd.txt",
                "https://cdn.example.org/v2/flags.json?env=prod",
                "https://api.example.net/other/plan.json",
            ])
            #expect(settings.resources.map(\.signedIn) == [true, false, true])
            #expect(settings.resources.map(\.scope) == ["https://api.example.net", "https://cdn.example.org", "https://api.example.net"])
        }
    }
}

extension ContractConfigurationTests {
    /// `--check-config` outside the service, before any secret is installed: a broken contract is
    /// what it reports, not the secret that is not there yet.
    @Test func aBrokenContractIsReportedBeforeAMissingSecret() async throws {
        try await ConfigurationFixture.with { fixture in
            let file = try fixture.write("errorbusd.yaml", "api:\n  upload:\n    method: POST\n    body: multipart\n")
            do {
                _ = try DaemonConfiguration.load(file: file, environment: [:], credentialSource: fixture.directory + "/none")
                Issue.record("loaded")
            } catch {
                #expect((error as? ConfigurationError)?.key == "api.upload.body", "\(error)")
            }
        }
    }
}
