import ErrorBusUnits
import ErrorBus
import ErrorBusHTTP
import ErrorBusSupport
import Logging

// The configuration's keys, one table per section: each key's name, where it is held, its type
// and bound, whether a change takes a restart, and what it does. The default is the section
// type's own. In a key's documentation, a line starting with two spaces is shown as it is.

extension DaemonConfiguration {
    /// Every section, in the order the reference documents them.
    static let sections: [AnyConfigurationSection] = [
        API.keys.at(\.api),
        APIUpload.keys.at(\.api),
        UploadReceipt.keys.at(\.api),
        UploadParts.keys.at(\.api),
        Auth.keys.at(\.auth),
        Sync.keys.at(\.sync),
        Loader.keys.at(\.loader),
        State.keys.at(\.state),
        Shutdown.keys.at(\.shutdown),
        Log.keys.at(\.log),
        Control.keys.at(\.control),
        Health.keys.at(\.health),
        Metrics.keys.at(\.metrics),
        ErrorBusConfiguration.keys.at(\.bus),
    ]
}

extension DaemonConfiguration.API {
    static let keys = ConfigurationSection<Self>(
        name: "api",
        doc: "The remote HTTP API.",
        keys: [
            .init("base-url", \.baseURL, .httpURL, "The API's root URL: http or https, with a host, optionally a path prefix."),
            .init("token-path", \.tokenPath, .apiPath, """
                The OAuth 2.0 token endpoint (client-credentials grant), under base-url; only for auth.method \
                oauth2-client-credentials.
                """),
            .init("resources-path", \.resourcesPath, .apiPath, "Resources named without a URL: GET <base-url><resources-path>/<name>."),
            .init("probe-url", \.probeURL, ValueType.httpURL.orNone, default: "empty (http://127.0.0.1:8080/healthz here)", value: "", """
                What the reachability check GETs while the API is unreachable; only a 204 answer counts as reachable (a \
                redirect or a captive portal's page does not). Empty: <base-url>/healthz.
                """),
            .init("realm", \.realm, .text, "The authentication realm: 401s from this API are one incident, healed by one login."),
            .init("connect-timeout", \.connectTimeout, .duration(.greaterThan(.zero)), restart: true, "How long connecting (TCP and TLS) may take."),
            .init("request-timeout", \.requestTimeout, .duration(.greaterThan(.zero)), """
                How long a request may go without a byte sent or received (its progress), and how long one without \
                an upload's body may take in all. An upload takes as long as its file needs at the link's speed, or \
                sync.bandwidth's, as long as its bytes move.
                """),
            .init("ca-file", \.caFile, ValueType.absolutePath.orNone, restart: true, default: "empty (the system's only)", """
                A PEM bundle of extra certificate authorities to trust for https, on top of the system's.
                """),
            .init("classify", \.classify, .classification, """
                Corrections for an API that means something else by a failed answer than HTTP says, in order: \
                STATUS[ PROBLEM-TYPE]=CATEGORY, CATEGORY one of transient (retried with back-off), permanent (set aside \
                as a dead letter), rate-limited, unauthenticated (sign in again) and unreachable (wait for the probe). A \
                rule with a problem type (RFC 9457 "type") matches only answers carrying it, and goes before a rule of \
                the same status without. For example:
                  classify:
                    - 403 https://api.example.com/problems/disk-full=transient
                    - 422=permanent
                errorbusctl status lists the rules in force.
                """),
            .init("proxy", \.proxy, ValueType.proxyURL.orNone, restart: true, default: "empty (https_proxy, http_proxy)", value: "", """
                An HTTP proxy every request goes through, http://HOST[:PORT] (http://proxy.example.net:3128): \
                uploads, tokens, resources and probes, https through CONNECT. Its sign-in is proxy-user and a \
                password, never in this URL. Empty: the environment's https_proxy (or HTTPS_PROXY), http_proxy, \
                all_proxy and no_proxy, as curl reads them; a unit sets them with Environment= in a drop-in \
                (systemctl edit errorbusd).
                """),
            .init("proxy-user", \.proxyUser, ValueType.anyText.orNone, restart: true, """
                The user the proxy's sign-in (Basic) is for, api.proxy's or the environment's; its password is read \
                from proxy-password-file, else the credential "proxy-password" (LoadCredential=proxy-password:PATH).
                """),
            .init("proxy-password-file", \.proxyPasswordFile, ValueType.absolutePath.orNone, restart: true, example: "/etc/errorbusd/proxy-password", """
                A file holding the proxy's password (trailing newline ignored), readable only by errorbusd.
                """),
            .init("no-proxy", \.noProxy, .noProxy, restart: true, """
                Hosts reached without the proxy, as no_proxy lists them: a name (also every name under it), an \
                address, ADDRESS/BITS, or * for all. With proxy empty, added to the environment's no_proxy.
                """),
        ],
        validate: { _, api throws(ConfigurationError) in
            guard let user = api.proxyUser else { return }
            // RFC 7617 §2: the user-id cannot contain a colon.
            guard !user.isEmpty, !user.contains(":"), !user.contains(where: \.isNewline) else {
                throw ConfigurationError(key: "api.proxy-user", reason: "expected a user name without ':' or a line break, got \"\(user)\"")
            }
        }
    )
}

/// `api.upload.*`, which ``UploadContract/init(_:credentials:)`` reads as a whole once the other
/// sections are read: its keys make one contract, and a header may name a credential.
enum APIUpload {
    static let keys = ConfigurationSection<DaemonConfiguration.API>(
        name: "api.upload",
        doc: """
            How a file is uploaded, and which answer means the API has it. Templates (url, header values, \
            receipt.value) take {sha256} (the file's SHA-256, hex), {sha256-base64}, {name} (the file's name, \
            percent-encoded), {size} (bytes), {hostname} (this host's name) and the UTC date its job was queued: \
            {year}, {month}, {day}, {hour}.
            """,
        keys: [
            .init("method", type: "one of put, post", value: "PUT", "PUT or POST.") { $0.upload.method.rawValue },
            .init("url", type: "template", value: "/v1/items/{sha256}", """
                Where each file goes: a path under base-url, or a whole http(s) URL. With PUT, it should tell files \
                apart ({sha256} or {name}).
                """) { $0.upload.url.description },
            .init("body", type: "one of raw, multipart", value: "raw", """
                raw (the file is the body) or multipart (multipart/form-data, the file as the one part, named \
                multipart-field, with its name as filename).
                """) { if case .multipart = $0.upload.body { "multipart" } else { "raw" } },
            .init("multipart-field", shape: .optionalValue, type: "text", value: "", "The form field of body: multipart.") {
                if case .multipart(let field) = $0.upload.body { field } else { "" }
            },
            .init("headers", shape: .list, type: "list of NAME: VALUE", value: "[]", """
                Extra request headers, "NAME: VALUE". {credential:NAME} in a value is the credential NAME \
                (LoadCredential=NAME:PATH), never written here. For example:
                  headers:
                    - "X-Tenant: acme"
                    - "X-Api-Key: {credential:api-key}"
                """) { "[" + $0.upload.headers.map(\.name).joined(separator: ", ") + "]" },  // the values may hold secrets
            .init("idempotency-header", shape: .optionalValue, type: "text", value: "Idempotency-Key", """
                The header carrying the file's key, so that the API can tell an upload repeated after a lost answer: \
                its SHA-256 (hex), or, where {name} or a multipart body makes the name part of the upload, the SHA-256 \
                of that and the name (one content under two names is then two uploads). Empty: none.
                """) { $0.upload.idempotencyHeader ?? "" },
            .init("delivered", shape: .list, type: "list of statuses", value: "[2xx]", """
                The statuses that mean delivered: 2xx, or single statuses (201, 204). Any other answer is classified \
                (classify above refines how).
                """) { "[\($0.upload.delivered)]" },
        ]
    )
}

/// `api.upload.parts.*`, read with the rest of the upload contract.
enum UploadParts {
    static let keys = ConfigurationSection<DaemonConfiguration.API>(
        name: "api.upload.parts",
        doc: """
            Large files in parts, as object storage speaking the S3 API takes them (a multipart upload; needs \
            auth.method aws-sigv4): each part checked by its SHA-256, the parts the store acknowledged kept in the \
            state directory, so that an outage, a restart or a kill resumes at the next part instead of from zero. \
            A file discarded or set aside as a dead letter has its upload aborted.
            """,
        keys: [
            .init("above", shape: .optionalValue, type: "size", value: "", """
                Files larger than this go in parts (at least 5MiB); empty: every file in one request (S3 takes up to \
                5GiB so).
                """) { $0.upload.parts.map { ByteCountText.exact($0.above) } ?? "" },
            .init("size", type: "size", value: "16MiB", """
                The size of each part but the last, 5MiB to 5GiB: what an interruption sends again at most. Raised \
                for a file that would need more than 10,000 parts.
                """) { ByteCountText.exact($0.upload.parts?.size ?? 16 << 20) },
            .init("parallel", type: "integer", value: "4", "How many parts of one file are sent at once, 1 to 64 and at most sync.concurrency.") {
                String($0.upload.parts?.parallel ?? 4)
            },
        ]
    )
}

/// `api.upload.receipt.*`, read with the rest of the upload contract.
enum UploadReceipt {
    static let keys = ConfigurationSection<DaemonConfiguration.API>(
        name: "api.upload.receipt",
        doc: """
            What a delivered answer must also carry to count, so that a proxy's or captive portal's 200 is not taken \
            for a delivery. Set one of json-pointer and header, or neither for none.
            """,
        keys: [
            .init("json-pointer", shape: .optionalValue, type: "JSON pointer", value: "/sha256", """
                A JSON pointer (RFC 6901) into the answer's body whose value must be the file's SHA-256 (hex).
                """) { if case .jsonPointer(let pointer) = $0.upload.receipt { pointer } else { "" } },
            .init("header", shape: .optionalValue, type: "text", value: "", """
                Or a response header that must equal value, e.g. x-amz-checksum-sha256 with value {sha256-base64}.
                """) { if case .header(let name, _) = $0.upload.receipt { name } else { "" } },
            .init("value", shape: .optionalValue, type: "template", default: "{sha256}", value: "", "The header's expected value (a template).") {
                if case .header(_, let value) = $0.upload.receipt { value.description } else { "" }
            },
        ]
    )
}

extension DaemonConfiguration.Auth {
    static let keys = ConfigurationSection<Self>(
        name: "auth",
        doc: """
            How errorbusd signs in to the API. Secrets are never written in this file: each is read from its -file \
            key when set (again at every reload), else from systemd's credentials directory, which \
            LoadCredential=NAME:PATH in the unit fills (systemctl edit errorbusd); a new credential takes a restart.
            """,
        keys: [
            .init("method", \.method, .choice(Method.self), """
                oauth2-client-credentials (a token from token-path, renewed before it expires), bearer (a static \
                token), basic (user and password), mtls (a TLS client certificate; the API's CA goes in api.ca-file), \
                aws-sigv4 (every request signed with an access key, for object storage speaking the S3 API) or none. A 401 under bearer or basic, or a refused certificate, waits for an operator: errorbusctl says \
                so, and a new credential lets the work go.
                """),
            .init("client-id", \.clientID, .text, "oauth2-client-credentials: the client id sent to the token endpoint."),
            .init("client-secret-file", \.secretFiles[.clientSecret], ValueType.absolutePath.orNone, example: "/etc/errorbusd/client-secret", """
                A file holding the client secret (trailing newline ignored), readable only by errorbusd. Without it, \
                the secret is read from $CREDENTIALS_DIRECTORY/<credential-name>, which systemd's LoadCredential= fills.
                """),
            .init("credential-name", \.credentialName, .credentialName, "The credential name given to LoadCredential=."),
            .init("refresh-margin", \.refreshMargin, .duration(.atLeast(.zero)), """
                The access token is refreshed between this long and twice this long before it expires, at random, so \
                that hosts started together do not all ask for a token at once.
                """),
            .init("token-file", \.secretFiles[.token], ValueType.absolutePath.orNone, example: "/etc/errorbusd/token", """
                bearer: a file holding the token. Without it, the credential "token".
                """),
            .init("user", \.user, ValueType.anyText.orNone, "basic: the user name."),
            .init("password-file", \.secretFiles[.password], ValueType.absolutePath.orNone, example: "/etc/errorbusd/password", """
                basic: a file holding the password. Without it, the credential "password".
                """),
            .init("client-certificate-file", \.secretFiles[.clientCertificate], ValueType.absolutePath.orNone, restart: true,
                  example: "/etc/errorbusd/client.crt", """
                mtls: a file holding the client certificate (PEM, then any intermediates). Without it, the credential \
                "client-certificate". Read at start, as is its content.
                """),
            .init("client-key-file", \.secretFiles[.clientKey], ValueType.absolutePath.orNone, restart: true,
                  example: "/etc/errorbusd/client.key", """
                mtls: a file holding the certificate's unencrypted key (PEM). Without it, the credential "client-key".
                """),
            .init("access-key-id", \.accessKeyID, ValueType.anyText.orNone, """
                aws-sigv4: the access key id requests are signed with (not a secret; its secret access key is).
                """),
            .init("secret-access-key-file", \.secretFiles[.secretAccessKey], ValueType.absolutePath.orNone,
                  example: "/etc/errorbusd/secret-access-key", """
                aws-sigv4: a file holding the secret access key. Without it, the credential "secret-access-key".
                """),
            .init("session-token-file", \.secretFiles[.sessionToken], ValueType.absolutePath.orNone,
                  example: "/etc/errorbusd/session-token", """
                aws-sigv4 with temporary credentials: a file holding the session token, sent as x-amz-security-token. \
                Without it, the credential "session-token" if the unit loads one; long-lived keys have none.
                """),
            .init("region", \.region, ValueType.anyText.orNone, """
                aws-sigv4: the region requests are signed for; object stores that have none take us-east-1 (MinIO, \
                Ceph RGW), R2 takes auto.
                """),
            .init("service", \.service, .text, "aws-sigv4: the service requests are signed for."),
        ],
        validate: { settings, auth throws(ConfigurationError) in
            if auth.method == .awsSigV4 {
                guard let key = auth.accessKeyID, !key.isEmpty else {
                    throw ConfigurationError(key: "auth.method", reason: "aws-sigv4 needs auth.access-key-id, the access key requests are signed with")
                }
                guard key.utf8.allSatisfy({ $0 > 0x20 && $0 < 0x7F && $0 != UInt8(ascii: "/") && $0 != UInt8(ascii: ",") }) else {
                    throw ConfigurationError(key: "auth.access-key-id", reason: "expected printable characters without '/', ',' or spaces, got \"\(key)\"")
                }
                guard let region = auth.region, !region.isEmpty else {
                    throw ConfigurationError(key: "auth.method", reason: "aws-sigv4 needs auth.region, the region requests are signed for (us-east-1 where the store has none)")
                }
                for (name, value) in [("auth.region", region), ("auth.service", auth.service)] {
                    guard !value.isEmpty, value.utf8.allSatisfy({ byte in
                        (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(byte) || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte)
                            || byte == UInt8(ascii: "-") || byte == UInt8(ascii: "_")
                    }) else {
                        throw ConfigurationError(key: name, reason: "expected lowercase letters, digits, '-' or '_' (eu-central-1, s3), got \"\(value)\"")
                    }
                }
            }
            guard auth.method == .basic else { return }
            guard let user = auth.user, !user.isEmpty else {
                throw ConfigurationError(key: "auth.method", reason: "basic needs auth.user, the user name the API knows")
            }
            // RFC 7617 §2: the user-id cannot contain a colon.
            guard !user.contains(":"), !user.contains(where: \.isNewline) else {
                throw ConfigurationError(key: "auth.user", reason: "a basic user name cannot contain ':' or a line break, got \"\(user)\"")
            }
        }
    )
}

extension DaemonConfiguration.Sync {
    static let keys = ConfigurationSection<Self>(
        name: "sync",
        doc: "Uploading the files dropped into the outbox.",
        subsections: [
            "backlog": "The backlog: the files waiting for delivery (queued, uploading, or held by an incident).",
            "dead-letters": """
                Dead letters (files the API rejected) wait for an operator; beyond these limits the oldest are given \
                up and their files removed, counted in errorbus_sync_dead_letters_pruned_total.
                """,
        ],
        keys: [
            .init("outbox", \.outbox, .absolutePath, restart: true, "The directory whose files are uploaded, each exactly once as far as the API can tell."),
            .init("after-delivery", type: "one of delete, move", "What happens to a file once the API has it: delete, or move (into sent-directory).") {
                $0.afterDelivery == .delete ? "delete" : "move"
            } read: { settings, sync throws(ConfigurationError) in
                if let move = try ValueType.choice([("delete", false), ("move", true)], format: { "\($0)" }).read(settings, "after-delivery") {
                    sync.afterDelivery = move ? .move(to: Self.defaultSentDirectory) : .delete
                }
            },
            .init("sent-directory", type: "path", value: Self.defaultSentDirectory, "Where delivered files go with after-delivery: move. Must not be the outbox, and must be on its file system (files are renamed into it).") {
                if case .move(let directory) = $0.afterDelivery { directory } else { Self.defaultSentDirectory }
            } read: { settings, sync throws(ConfigurationError) in
                if let directory = try ValueType.absolutePath.read(settings, "sent-directory"), case .move = sync.afterDelivery {
                    sync.afterDelivery = .move(to: directory)
                }
            },
            .init("concurrency", \.concurrency, .integer(.between(1, 1_024)), "At most this many uploads at once."),
            .init("parked-in-memory", \.parkedInMemory, .integer(.atLeast(1)), """
                Deprecated, and ignored: every upload an incident holds waits in the state's queue, at no memory \
                cost, whatever their number. Accepted with a warning until the next release refuses it; remove it.
                """),
            .init("max-file-size", \.maxFileSize, .size(.atLeast(1)), """
                Larger files are not uploaded, and not dead-lettered: they stay in the outbox, each logged and \
                reported to an invalid incident (cause fileTooLarge). Split such a file, or raise this and reload.
                """),
            .init("rescan-interval", \.rescanInterval, .duration(.greaterThan(.zero)), """
                How often the outbox is listed again, to catch files whose notification was missed. A rescan takes at most a \
                twentieth of the time: one of a huge outbox (seconds for a million files) comes 19 times its duration later.
                """),
            .init("settle-time", \.settleTime, .duration(.atLeast(.zero)), """
                A file written in place (closed by its writer, found by such a rescan, or there when errorbusd starts) \
                is taken only once it has not changed for this long, so half-written files are left alone; such a file \
                is looked at again this long after. A file renamed into the outbox is taken at once. Whatever this is, \
                no file is taken while a process has it open for writing (a read lease, which needs CAP_LEASE or the \
                file's ownership).
                """),
            .init("max-age", \.maxAge, ValueType.duration(.atLeast(.seconds(1))).orNone, """
                A file queued longer ago than this is not uploaded but set aside as a dead letter, with the reason, at \
                its next attempt: for an API that rejects old data (say 48h). Empty: no limit.
                """),
            .init("bandwidth", \.bandwidth, .bandwidth, default: "off (no limit)", value: "off", """
                The rate upload bodies take, all uploads together, evenly (no burst of a second's bytes): a size per \
                second (512KiB/s, 2MiB/s) or off; or a timetable of TIME,RATE by time of day (08:00,512KiB/s \
                19:00,off) or by day of week (Mon-08:00,1MiB/s Sat-00:00,off), local time, each rate in force from its \
                time until the next. Probes, sign-ins and resources never wait for it. A reload applies it to the \
                uploads under way; errorbusctl status shows the rate in force.
                """),
            .init("backlog.max-bytes", \.backlog.maxBytes, ValueType.size(.atLeast(1)).orNone, "At most this many bytes of files wait. Empty: no limit."),
            .init("backlog.max-files", \.backlog.maxFiles, ValueType.integer(.atLeast(1)).orNone, "At most this many files wait. Empty: no limit."),
            .init("backlog.overflow", \.backlog.overflow, .choice(Backlog.Overflow.self), """
                Beyond a limit: reject-new (new files stay in the outbox, not taken, until there is room) or \
                drop-oldest (the oldest files waiting, those held by an incident first, are set aside as dead letters \
                to make room). Each file is counted in errorbus_sync_overflow_files_total; the journal says when an \
                overflow starts and when it ends.
                """),
            .init("dead-letters.max-count", \.deadLetters.maxCount, .integer(.atLeast(0)), "At most this many. 0: none kept."),
            .init("dead-letters.max-age", \.deadLetters.maxAge, ValueType.duration(.atLeast(.seconds(60))).orNone, """
                None set aside longer ago than this. Empty: no limit.
                """),
            .init("delivered-retention", \.deliveredRetention, ValueType.duration(.atLeast(.seconds(60))).orNone, """
                Delivered files are forgotten this long after their delivery (checked hourly), so that the state does \
                not grow by a row per file for ever (discarded ones are kept: their files stay in the outbox, and the \
                record keeps them from being sent). Until then a copy of delivered content dropped again is recognised \
                and removed without an upload; after, it is uploaded again, which the API absorbs by its \
                Idempotency-Key. Empty: kept for ever.
                """),
        ],
        validate: { _, sync throws(ConfigurationError) in
            if case .move(let sentDirectory) = sync.afterDelivery, Self.sameDirectory(sentDirectory, sync.outbox) {
                throw ConfigurationError(
                    key: "sync.sent-directory",
                    reason: "must differ from sync.outbox (\(sync.outbox)), or delivered files would be sent again"
                )
            }
            // A rename cannot cross file systems (EXDEV): every delivered file would stay in the
            // outbox. Checked where both directories exist; a missing one is reported when used.
            if case .move(let sentDirectory) = sync.afterDelivery,
               let outbox = try? SystemCall.fileSystem(of: sync.outbox),
               let sent = try? SystemCall.fileSystem(of: sentDirectory),
               outbox != sent {
                throw ConfigurationError(
                    key: "sync.sent-directory",
                    reason: "must be on the file system of sync.outbox (\(sync.outbox)): a delivered file is renamed into it, which cannot cross file systems, so every delivered file would stay in the outbox"
                )
            }
            if let maxBacklogBytes = sync.backlog.maxBytes, maxBacklogBytes < sync.maxFileSize {
                throw ConfigurationError(
                    key: "sync.backlog.max-bytes",
                    reason: "must be at least sync.max-file-size (\(ByteCountText.exact(sync.maxFileSize))), or a file of that size could never be taken, got \"\(ByteCountText.exact(maxBacklogBytes))\""
                )
            }
        }
    )

    private static func sameDirectory(_ a: String, _ b: String) -> Bool {
        func normalized(_ path: String) -> String {
            "/" + path.split(separator: "/").filter { $0 != "." }.joined(separator: "/")
        }
        return normalized(a) == normalized(b)
    }
}

extension DaemonConfiguration.Loader {
    static let keys = ConfigurationSection<Self>(
        name: "loader",
        doc: "Keeping local copies of remote resources fresh (conditional GETs, atomic replace).",
        keys: [
            .init("directory", \.directory, .absolutePath, "Where the copies are written, as <directory>/<name>."),
            .init("resources", \.resources, .resources, """
                The resources, each NAME=INTERVAL or URL=INTERVAL: NAME (letters, digits, '.', '_', '-', not starting \
                with '.') is fetched from <resources-path>/NAME, a URL from itself and stored under its last path \
                segment, every INTERVAL (at least 1s), conditionally (If-None-Match and If-Modified-Since). Only URLs on \
                base-url's scheme, host and port carry the sign-in. For example:
                  resources:
                    - motd.txt=5m
                    - feature-flags.json=30s
                    - https://cdn.example.com/v2/catalog.json=1h
                In the environment: ERRORBUSD_LOADER_RESOURCES=motd.txt=5m,feature-flags.json=30s
                """),
        ]
    )
}

extension DaemonConfiguration.State {
    static let keys = ConfigurationSection<Self>(
        name: "state",
        doc: "The durable state: queue, parked and dead-lettered jobs, incident history (SQLite).",
        keys: [
            .init("directory", \.directory, ValueType.absolutePath.orDefault, restart: true, value: "", """
                Empty: $STATE_DIRECTORY (systemd's StateDirectory=; the first if it lists several), else \
                /var/lib/errorbusd.
                """),
            .init("min-free-space", \.minFreeSpace, .size(.atLeast(0)), restart: true, """
                Uploads paused because the state directory's disk was full resume once it has this much free (checked \
                with a back-off, at once by errorbusctl retry of the incident).
                """),
        ]
    )
}

extension DaemonConfiguration.Shutdown {
    static let keys = ConfigurationSection<Self>(
        name: "shutdown",
        doc: "Stopping on SIGTERM.",
        keys: [
            .init("drain-timeout", \.drainTimeout, .duration(.atLeast(.zero)), """
                Uploads and fetches in flight get this long to finish; what does not finish stays queued for the next \
                start.
                """)
        ]
    )
}

extension DaemonConfiguration.Log {
    static let keys = ConfigurationSection<Self>(
        name: "log",
        doc: "Logging: native journal entries, or lines on standard error.",
        keys: [
            .init("level", \.level, .choice(Logger.Level.self), restart: true, "The least severe level logged."),
            .init("target", \.target, .choice(Target.self), restart: true, """
                Where entries go. auto: native journal entries (with their fields) when standard error is systemd's \
                journal stream ($JOURNAL_STREAM names it, as under systemd), else lines on standard error. journal: \
                always native journal entries through /run/systemd/journal/socket, for a journald that did not start \
                errorbusd (a container, another supervisor); errorbusd does not start (exit 78) when that socket does \
                not exist, and writes lines on standard error while a running journald is unreachable. stderr: always \
                lines on standard error, TIME LEVEL MESSAGE then the fields as FIELD=value.
                """),
        ]
    )
}

extension DaemonConfiguration.Control {
    static let keys = ConfigurationSection<Self>(
        name: "control",
        doc: "The Varlink control socket errorbusctl talks to.",
        keys: [
            .init("socket-path", \.socketPath, ValueType.absolutePath.orDefault, restart: true, value: "", """
                The socket's path, at most 107 bytes. Empty: $RUNTIME_DIRECTORY/io.errorbus.Control (systemd's \
                RuntimeDirectory=), else /run/errorbusd/io.errorbus.Control.
                """),
            .init("group", \.group, ValueType.groupName.orNone, restart: true, """
                Besides root, members of this group may retry, discard, pause, resume, … Anyone who can open the \
                socket may read. Empty: root only.
                """),
            .init("max-connections", \.maxConnections, .integer(.between(1, 65_536)), restart: true, """
                At most this many clients at once. The last eighth is kept for root and the group's members, so that \
                other local users cannot lock them out.
                """),
            .init("max-connections-per-user", \.maxConnectionsPerUser, .integer(.between(1, 65_536)), restart: true, """
                At most this many clients of one user at once (root and the group's members are exempt). A client that \
                sends nothing for 10 s after connecting is disconnected.
                """),
        ],
        validate: { _, control throws(ConfigurationError) in
            guard control.socketPath.utf8.count <= Self.maximumSocketPathLength else {
                throw ConfigurationError(
                    key: "control.socket-path",
                    reason: "is \(control.socketPath.utf8.count) bytes long; a Unix socket path holds at most \(Self.maximumSocketPathLength)"
                )
            }
        }
    )

    /// `sun_path` holds 108 bytes, one of them the terminating NUL.
    static let maximumSocketPathLength = 107
}

extension DaemonConfiguration.Health {
    static let keys = ConfigurationSection<Self>(
        name: "health",
        doc: """
            What healthy delivery is, for errorbusctl health (exit status 0 OK, 1 WARNING, 2 CRITICAL, 3 UNKNOWN, as \
            monitoring plugins), the Status line of systemctl status and GetStatus. A measure at or beyond its warning \
            level is a warning, at or beyond its critical level critical. Empty: not checked.
            """,
        subsections: [
            "oldest-job": "How long the oldest file waiting for delivery has waited.",
            "parked": "How many jobs incidents hold (parked).",
            "dead-letters": """
                How many files wait as dead letters for an operator: those the store keeps now, as \
                errorbus_jobs{service="sync",state="dead_lettered"} counts them. errorbusctl retry --dead-letters or \
                discard --dead-letters clears it at once.
                """,
            "needs-operator": """
                How many open incidents wait for an operator (state needsOperator): nothing more happens to their work \
                until someone retries or discards it, so one is critical by default.
                """,
            "incident-age": "How long the oldest open incident has been open.",
            "free-space": """
                The free space left for the state directory: a problem at or below. Each level is the lower of its size \
                and its percentage of the file system's size (*-percent), so that a small file system is not critical \
                for ever, even empty: with the defaults, one of 64 MiB warns at 6.4 MiB free and is critical at \
                3.2 MiB, where 1 GiB and 100 MiB could never be free; one of 10 GiB or more keeps the sizes. A size set \
                to nothing is not checked; a percentage set to nothing leaves its size alone. errorbus_health_check_threshold \
                exports the levels checked.
                """,
            "not-delivering": """
                How long work has waited while nothing was delivered: since the last delivery, the oldest waiting \
                file's arrival or errorbusd's start, whichever is latest. A host whose every upload is held (an outage, \
                a paused service, a full disk) says so within a minute.
                """,
            "refused": """
                While an incident paces uploads (their API refuses some and serves the others: a rate, a quota, a bad \
                backend), the percentage of the latest uploads (at most 128) it refused: a host that delivers at a \
                fraction of its pace says so, however much gets through. 0 while nothing paces.
                """,
        ],
        keys: [
            .init("oldest-job.warning", \.oldestJob.warning, ValueType.duration(.greaterThan(.zero)).orNone, ""),
            .init("oldest-job.critical", \.oldestJob.critical, ValueType.duration(.greaterThan(.zero)).orNone, ""),
            .init("parked.warning", \.parked.warning, ValueType.integer(.atLeast(1)).orNone, ""),
            .init("parked.critical", \.parked.critical, ValueType.integer(.atLeast(1)).orNone, ""),
            .init("dead-letters.warning", \.deadLetters.warning, ValueType.integer(.atLeast(1)).orNone, ""),
            .init("dead-letters.critical", \.deadLetters.critical, ValueType.integer(.atLeast(1)).orNone, ""),
            .init("needs-operator.warning", \.needsOperator.warning, ValueType.integer(.atLeast(1)).orNone, ""),
            .init("needs-operator.critical", \.needsOperator.critical, ValueType.integer(.atLeast(1)).orNone, ""),
            .init("incident-age.warning", \.incidentAge.warning, ValueType.duration(.greaterThan(.zero)).orNone, ""),
            .init("incident-age.critical", \.incidentAge.critical, ValueType.duration(.greaterThan(.zero)).orNone, ""),
            .init("free-space.warning", \.freeSpace.warning, ValueType.size(.atLeast(0)).orNone, ""),
            .init("free-space.critical", \.freeSpace.critical, ValueType.size(.atLeast(0)).orNone, ""),
            .init("free-space.warning-percent", \.freeSpacePercent.warning, ValueType.integer(.between(1, 100)).orNone, ""),
            .init("free-space.critical-percent", \.freeSpacePercent.critical, ValueType.integer(.between(1, 100)).orNone, ""),
            .init("not-delivering.warning", \.notDelivering.warning, ValueType.duration(.greaterThan(.zero)).orNone, ""),
            .init("not-delivering.critical", \.notDelivering.critical, ValueType.duration(.greaterThan(.zero)).orNone, ""),
            .init("refused.warning", \.refused.warning, ValueType.integer(.between(1, 100)).orNone, ""),
            .init("refused.critical", \.refused.critical, ValueType.integer(.between(1, 100)).orNone, ""),
        ],
        validate: { _, health throws(ConfigurationError) in
            try ordered("oldest-job", health.oldestJob, DurationText.exact)
            try ordered("parked", health.parked) { "\($0)" }
            try ordered("dead-letters", health.deadLetters) { "\($0)" }
            try ordered("needs-operator", health.needsOperator) { "\($0)" }
            try ordered("incident-age", health.incidentAge, DurationText.exact)
            try ordered("free-space", health.freeSpace, below: true, ByteCountText.exact)
            try ordered("free-space", health.freeSpacePercent, below: true, suffix: "-percent") { "\($0)" }
            try ordered("not-delivering", health.notDelivering, DurationText.exact)
            try ordered("refused", health.refused) { "\($0)" }
        }
    )

    private static func ordered<Value>(
        _ name: String,
        _ levels: Levels<Value>,
        below: Bool = false,
        suffix: String = "",
        _ show: (Value) -> String
    ) throws(ConfigurationError) {
        guard let warning = levels.warning, let critical = levels.critical else { return }
        if below ? critical > warning : critical < warning {
            throw ConfigurationError(
                key: "health.\(name).critical\(suffix)",
                reason: "must be \(below ? "at most" : "at least") health.\(name).warning\(suffix) (\(show(warning))), got \"\(show(critical))\""
            )
        }
    }
}

extension DaemonConfiguration.Metrics {
    static let keys = ConfigurationSection<Self>(
        name: "metrics",
        doc: """
            A Prometheus scrape endpoint: GET /metrics on this address, the same metrics as errorbusctl metrics. \
            127.0.0.1:9464 for a local agent, 0.0.0.0:9464 (or the address of one interface) for a scraper elsewhere; \
            anyone who can reach it may read the metrics. errorbusd.service allows no IP listener \
            (SocketBindDeny=any, where systemd has its BPF framework): with this set, add SocketBindAllow=tcp:PORT with \
            systemctl edit errorbusd.
            """,
        keys: [
            .init("listen", \.listen, ValueType.listenAddress.orNone, restart: true, "Empty: no listener. Port 0 takes any free port, which the journal tells.")
        ]
    )
}

extension ErrorBusConfiguration {
    static let keys = ConfigurationSection<Self>(
        name: "bus",
        doc: "The ErrorBus: how failures become incidents and how each incident is handled.",
        subsections: [
            "backoff": """
                Exponential back-off for transient failures (5xx, resets, timeouts), one canary request per step for the \
                whole incident: the n-th wait is random in 0 … base × factor^n, and once that reaches the cap, in \
                cap/2 … cap. The cap is how late the end of an outage is noticed; the retry budget (retry-budget below) \
                paces a long one.
                """,
            "rate-limit": "Honouring the server's Retry-After on 429 and 503.",
            "reachability": "Probing an unreachable API (DNS failure, refused connection, no route, captive portal).",
            "concurrency": """
                How many uploads to one API are under way at once, first runs and released jobs together. The number \
                adapts below the maximum: it starts at initial and doubles every round trip (slow start), then grows by \
                one per round trip while answers stay fast; it halves on a 429, a 503, a timeout or a round trip whose \
                answers are much slower than usual, and stops growing while an incident holds the API. When the API \
                comes back after an outage, it starts slow again, so a fleet's recovery is a ramp, not a surge. A lone \
                host reaches the maximum within a few round trips.
                """,
            "pacing": """
                An API that refuses some uploads and serves the others (a rate limit, a quota, a full queue, a cold start, \
                one bad backend behind a balancer) is one incident per cause that paces instead of holding: nothing is \
                held back, the refused files are tried again after a short back-off of their own (no sooner than a \
                Retry-After), and the uploads to that API are sent at the rate it is seen to serve. Only when it serves \
                nothing (several uploads in a row failing, more than chance allows at the share that failed before) \
                does the incident hold the API and test it with one canary at a time.
                """,
            "pacing.retry": "The back-off before a refused file is tried again while the API serves others (a Retry-After is waited at least).",
            "release": "Releasing the jobs parked by an incident once its cause is gone.",
            "retry-budget": "The retry budget (a token bucket): retries can never add more than a fraction of recent successes, plus a small floor.",
            "isolation": """
                A file that fails while others of its service are delivered (one the API refuses with a 5xx, one that \
                never gets an answer, a 429 for one name) fails for a reason of its own: it leaves the incident, whose \
                other files go, and is retried on its own back-off, then set aside as a dead letter with its cause. Told \
                apart once its failures, each counted only while other files were delivered, are less likely than one \
                in 10^evidence had it failed only as often as the others fail the same way: a few failures when the \
                others are delivered, many more when the API refuses a share of everything (at a third refused, \
                thirteen in a row). A file is given up only after max-attempts failures on its own, each while others \
                were delivered.
                """,
            "isolation.backoff": "The back-off between its retries (a 429's Retry-After is waited instead).",
        ],
        keys: [
            .init("backoff.base", \.backoff.base, .duration(.greaterThan(.zero)), restart: true, "The first wait's bound."),
            .init("backoff.factor", \.backoff.factor, .number(.between(1, 100)), restart: true, "Each step multiplies the bound by this."),
            .init("backoff.cap", \.backoff.cap, .duration(.greaterThan(.zero)), restart: true, "The bound never exceeds this; at least base."),
            .init("rate-limit.minimum", \.rateLimit.minimum, .duration(.atLeast(.zero)), restart: true, "Shorter hints are raised to this."),
            .init("rate-limit.maximum", \.rateLimit.maximum, .duration(.greaterThan(.zero)), restart: true, "Longer hints are lowered to this; at least minimum."),
            .init("rate-limit.jitter", \.rateLimit.jitter, .number(.between(0, 1)), restart: true, """
                Up to this fraction of the hint is added, so clients told the same moment do not all return in it: \
                hosts a server shed together come back spread over half its hint.
                """),
            .init("reachability.initial-interval", \.reachability.initialInterval, .duration(.greaterThan(.zero)), restart: true, "The wait before the first probe."),
            .init("reachability.factor", \.reachability.factor, .number(.between(1, 100)), restart: true, "Each failed probe multiplies the wait by this."),
            .init("reachability.maximum-interval", \.reachability.maximumInterval, .duration(.greaterThan(.zero)), restart: true, "The wait never exceeds this; at least initial-interval."),
            .init("reachability.local-maximum-interval", \.reachability.localMaximumInterval, .duration(.greaterThan(.zero)), restart: true, """
                Each wait is drawn at random from zero to its interval, so that hosts that lost the network together do \
                not probe together. A cause on this host's side of the network (a captive portal, no DNS, no route) \
                costs the API nothing to probe: its wait never exceeds this.
                """),
            .init("reachability.network-change-spread", \.reachability.networkChangeSpread, .duration(.atLeast(.zero)), restart: true, """
                After a change of the host's network (a link, an address, a route), a waiting probe runs within this, \
                at random; 0s: at once.
                """),
            .init("concurrency.maximum", \.concurrency.maximum, .integer(.between(1, 65_536)), restart: true, "The most at once (was bus.release.concurrency)."),
            .init("concurrency.initial", \.concurrency.initial, .integer(.atLeast(1)), restart: true, "Where a slow start begins, at most maximum."),
            .init("concurrency.decrease", \.concurrency.decrease, .number(.between(0.01, 1)), restart: true, """
                What a decrease multiplies the number by; 1 never decreases (with initial equal to maximum, a fixed \
                number: what a lone host with a private API may want).
                """),
            .init("concurrency.latency-tolerance", \.concurrency.latencyTolerance, .number(.between(1, 100)), restart: true, """
                A round trip slower than this times the usual latency counts as the API pushing back.
                """),
            .init("pacing.rate", \.pacing.adaptsRate, .choice([("adaptive", true), ("off", false)]) { $0 ? "adaptive" : "off" }, restart: true, """
                adaptive: the uploads to an API that refuses some (429, 503) are sent at a rate learnt from its refusals \
                and from the quota it states (RateLimit, RateLimit-Policy, X-RateLimit-*), spread evenly; the rate is off \
                until the API first refuses, and off again after three of its cycles (or pacing.quiet) without a refusal. off: only the number at \
                once adapts (bus.concurrency).
                """),
            .init("pacing.decrease", \.pacing.decrease, .number(.between(0.01, 0.99)), restart: true, "What a refusal multiplies the rate by."),
            .init("pacing.minimum-rate", \.pacing.minimum, .number(.between(0.001, 1_000_000)), restart: true, "The lowest rate, in uploads per second."),
            .init("pacing.cycle-requests", \.pacing.cycleRequests, .integer(.between(1, 1_000_000)), restart: true, """
                After a cut the rate grows back along a cubic curve that takes as long as this many uploads at the rate it \
                was cut from (at least 1 s, at most 5 s): about one refusal per this many uploads.
                """),
            .init("pacing.quiet", \.pacing.quiet, .duration(.atLeast(.seconds(60))), restart: true, "After this long without a refusal the rate is off again (or after three of its cycles, if sooner); at least 60s."),
            .init("pacing.retry.base", \.pacing.retry.base, .duration(.greaterThan(.zero)), restart: true, "The first wait's bound."),
            .init("pacing.retry.factor", \.pacing.retry.factor, .number(.between(1, 100)), restart: true, "Each step multiplies the bound by this."),
            .init("pacing.retry.cap", \.pacing.retry.cap, .duration(.greaterThan(.zero)), restart: true, "The bound never exceeds this; at least base."),
            .init("release.spread", \.release.spread, .duration(.atLeast(.zero)), restart: true, """
                Each released job starts after a random delay of up to this. The delays follow one another, so they \
                also bound the release rate (about 2/spread jobs a second).
                """),
            .init("retry-budget.success-ratio", \.retryBudget.successRatio, .number(.between(0, 1)), restart: true, "Tokens each success adds."),
            .init("retry-budget.floor-per-minute", \.retryBudget.floorPerMinute, .number(.greaterThan(0)), restart: true, """
                Tokens time adds per minute, so recovery stays possible when nothing succeeds: in a long outage, one \
                canary every 60/floor-per-minute seconds.
                """),
            // Below one token the bucket could never pay for a retry.
            .init("retry-budget.capacity", \.retryBudget.capacity, .number(.atLeast(1)), restart: true, """
                The most tokens the bucket holds: the canaries an outage's first seconds may spend at the back-off's \
                pace. With the floor, a host averages under one request per 5 s over a five-minute outage.
                """),
            .init("isolation.max-attempts", \.isolation.maxAttempts, ValueType.integer(.atLeast(1)).orNone, restart: true, """
                How many failures on its own a file may have before it is set aside as a dead letter; empty: retried \
                until it succeeds or an operator acts.
                """),
            .init("isolation.evidence", \.isolation.evidence, .number(.between(0.1, 100)), restart: true, """
                How unlikely, in decimal orders of magnitude, a file's failures must be as the API's before they count as \
                its own: 6 is one chance in a million.
                """),
            .init("isolation.backoff.base", \.isolation.backoff.base, .duration(.greaterThan(.zero)), restart: true, "The first wait's bound."),
            .init("isolation.backoff.factor", \.isolation.backoff.factor, .number(.between(1, 100)), restart: true, "Each step multiplies the bound by this."),
            .init("isolation.backoff.cap", \.isolation.backoff.cap, .duration(.greaterThan(.zero)), restart: true, "The bound never exceeds this; at least base."),
            .init("max-parked-jobs", \.maxParkedJobs, .integer(.atLeast(1)), restart: true, """
                At most this many jobs parked at once over all incidents; beyond it a job is stopped as "parking full" \
                and reported, never silently dropped.
                """),
            .init("dead-letter-grouping-window", \.deadLetterGroupingWindow, .duration(.greaterThan(.zero)), restart: true, """
                Dead letters with the same cause are grouped into one incident until none arrived for this long.
                """),
            .init("settle-window", \.settleWindow, .duration(.atLeast(.zero)), restart: true, """
                An incident whose cause went away stays open this long, holding nothing back, so that the same cause \
                coming back (an API that flaps) is the same incident, its back-off going on, not a new one; 0s: it \
                resolves at once.
                """),
            .init("attempt-timeout", \.attemptTimeout, ValueType.duration(.greaterThan(.zero)).orNone, restart: true, """
                How long one upload, fetch or sign-in may run before it is cancelled and counts as a transient failure; \
                empty: no limit. A backstop: api.request-timeout bounds each request first.
                """),
            .init("event-buffer-size", \.eventBufferSize, .integer(.atLeast(1)), restart: true, """
                How many events a subscriber (errorbusctl watch) may fall behind before it loses the oldest.
                """),
            .init("resolved-incident-history", \.resolvedIncidentHistory, .integer(.atLeast(0)), restart: true, """
                How many resolved incidents errorbusctl status and incidents keep showing.
                """),
            .init("grouping", \.grouping, .choice([("by-cause", .byCause), ("per-job", .perJob)]) { $0 == .byCause ? "by-cause" : "per-job" }, restart: true, """
                Which failures make one incident. by-cause: the same server, kind and cause is one incident whatever \
                job met it (one back-off, one probe, one re-authentication; the server is held for every job of the \
                service, or of every service when it cannot be reached). per-job: each failing job is an incident of \
                its own with its own back-off, probes and re-authentication, like per-request retry. per-job is an \
                ablation for benchmarks (scripts/bench-outages) and diagnosis, not for production.
                """),
        ],
        validate: { settings, bus throws(ConfigurationError) in
            try ordered(settings, "backoff.base", bus.backoff.base, "backoff.cap", bus.backoff.cap)
            try ordered(settings, "rate-limit.minimum", bus.rateLimit.minimum, "rate-limit.maximum", bus.rateLimit.maximum)
            try ordered(settings, "reachability.initial-interval", bus.reachability.initialInterval, "reachability.maximum-interval", bus.reachability.maximumInterval)
            if bus.concurrency.initial > bus.concurrency.maximum {
                throw ConfigurationError(
                    key: settings.key("concurrency.initial"),
                    reason: "expected an integer between 1 and \(bus.concurrency.maximum), got \"\(settings.raw("concurrency.initial") ?? "\(bus.concurrency.initial)")\""
                )
            }
            try ordered(settings, "isolation.backoff.base", bus.isolation.backoff.base, "isolation.backoff.cap", bus.isolation.backoff.cap)
            try ordered(settings, "pacing.retry.base", bus.pacing.retry.base, "pacing.retry.cap", bus.pacing.retry.cap)
        }
    )

    /// Checks `lower <= upper`, blaming whichever of the two keys was set (the upper one if both).
    private static func ordered(_ settings: SettingReader, _ lowerName: String, _ lower: Duration, _ upperName: String, _ upper: Duration) throws(ConfigurationError) {
        guard lower > upper else { return }
        let (lowerKey, upperKey) = (settings.key(lowerName), settings.key(upperName))
        if settings.isSet(upperName) || !settings.isSet(lowerName) {
            throw ConfigurationError(key: upperKey, reason: "must be at least \(lowerKey) (\(DurationText.exact(lower))), got \"\(DurationText.exact(upper))\"")
        }
        throw ConfigurationError(key: lowerKey, reason: "must be at most \(upperKey) (\(DurationText.exact(upper))), got \"\(DurationText.exact(lower))\"")
    }
}
