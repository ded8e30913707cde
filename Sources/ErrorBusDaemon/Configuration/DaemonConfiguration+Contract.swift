import ErrorBusHTTP
import ErrorBusSupport
import NIOSSL

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

// Reading how errorbusd signs in (`auth.*`) and how it uploads (`api.upload.*`), with the
// secrets both use.

extension DaemonConfiguration.Auth {
    /// Reads the secrets ``method`` needs, and only those: the client secret, the token or the
    /// password into ``secret``; for `mtls`, the certificate and key.
    mutating func readSecrets(_ credentials: CredentialReader) throws(ConfigurationError) {
        if let kind = Self.secretKind(of: method) {
            let name = kind == .clientSecret ? credentialName : kind.rawValue
            let key = kind == .clientSecret ? "auth.credential-name" : kind.fileKey
            (secret, secretSource) = try credentials.read(
                file: secretFiles[kind],
                fileKey: kind.fileKey,
                credential: name,
                credentialKey: key,
                what: kind.what
            )
            // A token or password goes into a header: a line break there would fail every request.
            if kind != .clientSecret, secret.value.unicodeScalars.contains(where: { $0.value < 0x20 || $0.value == 0x7F }) {
                throw ConfigurationError(key: secretFiles[kind] != nil ? kind.fileKey : key, reason: "the \(kind.what) holds a line break or another control character")
            }
        }
        if method == .awsSigV4 {
            // Temporary credentials come with a session token; long-lived ones have none.
            let kind = SecretKind.sessionToken
            if secretFiles[kind] != nil || credentials.holds(kind.rawValue) {
                let (token, _) = try credentials.read(
                    file: secretFiles[kind], fileKey: kind.fileKey, credential: kind.rawValue, credentialKey: kind.fileKey, what: kind.what
                )
                guard !token.value.unicodeScalars.contains(where: { $0.value < 0x20 || $0.value == 0x7F }) else {
                    throw ConfigurationError(key: kind.fileKey, reason: "the session token holds a line break or another control character")
                }
                sessionToken = token
            }
        }
        if method == .mtls {
            let (certificate, certificateSource) = try credentials.read(
                file: secretFiles[.clientCertificate], fileKey: SecretKind.clientCertificate.fileKey,
                credential: SecretKind.clientCertificate.rawValue, credentialKey: SecretKind.clientCertificate.fileKey,
                what: "client certificate (PEM)"
            )
            let (key, _) = try credentials.read(
                file: secretFiles[.clientKey], fileKey: SecretKind.clientKey.fileKey,
                credential: SecretKind.clientKey.rawValue, credentialKey: SecretKind.clientKey.fileKey,
                what: "client key (PEM)"
            )
            let chain: [NIOSSLCertificate]
            do {
                chain = try NIOSSLCertificate.fromPEMBytes(Array(certificate.value.utf8))
            } catch {
                chain = []
            }
            guard !chain.isEmpty else {
                throw ConfigurationError(key: SecretKind.clientCertificate.fileKey, reason: "the client certificate is not a PEM certificate (-----BEGIN CERTIFICATE-----)")
            }
            let privateKey: NIOSSLPrivateKey
            do {
                privateKey = try NIOSSLPrivateKey(bytes: Array(key.value.utf8), format: .pem)
            } catch {
                throw ConfigurationError(key: SecretKind.clientKey.fileKey, reason: "the client key is not an unencrypted PEM private key (-----BEGIN PRIVATE KEY-----): \(error)")
            }
            // A TLS context refuses a key that is not the certificate's: find out now, not at the
            // first upload.
            var tls = TLSConfiguration.makeClientConfiguration()
            tls.certificateChain = chain.map { .certificate($0) }
            tls.privateKey = .privateKey(privateKey)
            do {
                _ = try NIOSSLContext(configuration: tls)
            } catch {
                throw ConfigurationError(key: SecretKind.clientKey.fileKey, reason: "the client key does not go with the client certificate: \(error)")
            }
            clientIdentity = ClientIdentity(certificateChain: chain, privateKey: privateKey, certificateSource: certificateSource)
        }
    }
}

/// Reads secrets: from a file named by a key, else from systemd's credentials directory
/// (`$CREDENTIALS_DIRECTORY/NAME`), else — `--check-config` outside the service — from where
/// the installed unit loads credentials (`/etc/errorbusd/NAME`).
struct CredentialReader {
    var credentialsDirectory: String?
    var credentialSource: String?

    typealias Source = DaemonConfiguration.Auth.SecretSource

    /// Whether credential `name` is there to be read: in the credentials directory, or where the
    /// installed unit loads it from. For a secret that may be absent (a session token).
    func holds(_ name: String) -> Bool {
        guard let directory = credentialsDirectory ?? credentialSource else { return false }
        return ((try? FileStatus.ofLink(directory + "/" + name)) ?? nil) != nil
    }

    /// The secret in `file` if set, else in credential `name`, trailing newlines removed, and
    /// where it came from.
    ///
    /// - Parameters:
    ///   - fileKey: the key that names a file, suggested when there is no credentials directory;
    ///     `nil` when there is none (a header's `{credential:NAME}`).
    ///   - credentialKey: the key blamed for a credential that cannot be read.
    ///   - what: what the secret is, for messages ("client secret").
    func read(file: String?, fileKey: String?, credential name: String, credentialKey: String, what: String) throws(ConfigurationError) -> (Secret, Source) {
        let source: Source
        let key: String
        let description: String
        if let file, let fileKey {
            (source, key, description) = (.file(file), fileKey, "the \(what) file \(file)")
        } else if let credentialsDirectory {
            let path = credentialsDirectory + "/" + name
            source = .credential(name: name, path: path)
            (key, description) = (credentialKey, "the credential \(path) ($CREDENTIALS_DIRECTORY/\(name))")
        } else if let credentialSource {
            let path = credentialSource + "/" + name
            source = .credentialSource(name: name, path: path)
            (key, description) = (credentialKey, "the \(what) \(path), which errorbusd.service loads as its credential \"\(name)\"")
        } else {
            let alternative = fileKey.map { "set \($0), or " } ?? ""
            throw ConfigurationError(
                key: fileKey ?? credentialKey,
                reason: """
                    no \(what): \(alternative)run errorbusd under systemd with \
                    LoadCredential=\(name):PATH ($CREDENTIALS_DIRECTORY is not set)
                    """
            )
        }
        let path: String
        switch source {
        case .file(let file): path = file
        case .credential(_, let copy), .credentialSource(_, let copy): path = copy
        case .given: path = ""
        }
        let bytes: [UInt8]
        do {
            bytes = try ConfigurationFile.read(path, limit: 65_536)
        } catch {
            var reason = "cannot read \(description): \(error)"
            switch source {
            case .credential: reason += "; does the unit have LoadCredential=\(name):PATH?"
            case .credentialSource: reason += "; put the API's \(what) there (owned by root, mode 0600)"
            default: break
            }
            throw ConfigurationError(key: key, reason: reason)
        }
        guard var secret = String(validating: bytes, as: UTF8.self) else {
            throw ConfigurationError(key: key, reason: "\(description) is not UTF-8 text")
        }
        while secret.hasSuffix("\n") || secret.hasSuffix("\r") || secret.hasSuffix("\r\n") {
            secret.removeLast()
        }
        guard !secret.isEmpty else {
            if case .credential = source {
                // errorbusd.service has SetCredential=client-secret: (empty) as the fallback of its
                // LoadCredential=, so that a missing file reaches errorbusd, which can say what to
                // do, instead of failing the start with systemd's "243/CREDENTIALS" in a loop.
                throw ConfigurationError(
                    key: key,
                    reason: """
                        no \(what): the credential \"\(name)\" is empty, so the file it is loaded from is \
                        missing or empty (\(DaemonConfiguration.Auth.credentialFile(name)) for errorbusd.service). Put the API's \
                        \(what) there (owned by root, mode 0600), then: systemctl restart errorbusd
                        """
                )
            }
            throw ConfigurationError(key: key, reason: "\(description) is empty")
        }
        return (Secret(secret), source)
    }
}

extension UploadContract {
    /// `api.upload.*` from a reader scoped to it, reading the credentials `api.upload.headers`
    /// name.
    init(_ settings: SettingReader, credentials: CredentialReader) throws(ConfigurationError) {
        let defaults = Self()
        let method = try settings.value("method", .choice(Method.self), default: defaults.method)

        let urlKey = "api.upload.url"
        var url = defaults.url
        if let text = settings.raw("url") {
            url = try Self.template(text, key: urlKey)
            try Self.checkURL(url, text: text, key: urlKey)
            if method == .put, !url.parts.contains(.sha256), !url.parts.contains(.sha256Base64), !url.parts.contains(.name) {
                throw ConfigurationError(key: urlKey, reason: "\"\(text)\": a PUT to it would put every file at one URL; include {sha256} or {name}")
            }
        }

        let multipartField = settings.optionalString("multipart-field", default: nil)
        let body: Body
        switch try settings.value("body", .choice([("raw", "raw"), ("multipart", "multipart")], format: { $0 }), default: "raw") {
        case "multipart":
            guard let multipartField, !multipartField.isEmpty else {
                throw ConfigurationError(
                    key: "api.upload.body",
                    reason: "multipart needs api.upload.multipart-field, the form field the API reads the file from (file, upload, …)"
                )
            }
            guard Self.isToken(multipartField) else {
                throw ConfigurationError(key: "api.upload.multipart-field", reason: "expected a field name of letters, digits, '-', '_' and '.', got \"\(multipartField)\"")
            }
            body = .multipart(field: multipartField)
        default:
            if let multipartField {
                throw ConfigurationError(key: "api.upload.multipart-field", reason: "is set to \"\(multipartField)\" but api.upload.body is raw; set api.upload.body: multipart or remove it")
            }
            body = .raw
        }

        let headersKey = "api.upload.headers"
        var headers: [Header] = []
        for entry in settings.list("headers") ?? [] {
            guard let colon = entry.firstIndex(of: ":") else {
                throw ConfigurationError(key: headersKey, reason: "expected NAME: VALUE (X-Tenant: acme), got \"\(entry)\"")
            }
            let name = String(entry[..<colon].configurationTrimmed)
            guard Self.isToken(name) else {
                throw ConfigurationError(key: headersKey, reason: "\"\(name)\" is not a header name (letters, digits, '-')")
            }
            guard !Self.reservedHeaders.contains(name.lowercased()) else {
                throw ConfigurationError(key: headersKey, reason: "\(name) is errorbusd's to send (auth.method, api.upload.body and idempotency-header set it)")
            }
            guard !headers.contains(where: { $0.name.lowercased() == name.lowercased() }) else {
                throw ConfigurationError(key: headersKey, reason: "\(name) is listed twice")
            }
            let valueText = String(entry[entry.index(after: colon)...].configurationTrimmed)
            let value: UploadTemplate
            do {
                value = try UploadTemplate.parse(valueText) { credential throws(UploadTemplate.ParseError) in
                    guard SafeFileName.isSafe(credential) else {
                        throw .credential("{credential:\(credential)}: expected a credential name of \(SafeFileName.expectation)")
                    }
                    do throws(ConfigurationError) {
                        return try credentials.read(file: nil, fileKey: nil, credential: credential, credentialKey: headersKey, what: "credential \(credential) of header \(name)").0
                    } catch {
                        throw .credential(error.reason)
                    }
                }
            } catch {
                throw ConfigurationError(key: headersKey, reason: "\(name): \(error)")
            }
            let sample = value.render(UploadItem(sha256: "", name: "", size: 0))
            guard !sample.unicodeScalars.contains(where: { ($0.value < 0x20 && $0 != "\t") || $0.value == 0x7F }) else {
                throw ConfigurationError(key: headersKey, reason: "\(name): a header value cannot hold a line break or another control character (nor can a credential it names)")
            }
            headers.append(Header(name: name, value: value))
        }

        let idempotencyHeader = settings.optionalString("idempotency-header", default: defaults.idempotencyHeader)
        if let idempotencyHeader {
            guard Self.isToken(idempotencyHeader) else {
                throw ConfigurationError(key: "api.upload.idempotency-header", reason: "\"\(idempotencyHeader)\" is not a header name (letters, digits, '-')")
            }
            guard !Self.reservedHeaders.contains(idempotencyHeader.lowercased()) else {
                throw ConfigurationError(key: "api.upload.idempotency-header", reason: "\(idempotencyHeader) is errorbusd's to send otherwise; name another header, or none")
            }
            guard !headers.contains(where: { $0.name.lowercased() == idempotencyHeader.lowercased() }) else {
                throw ConfigurationError(key: "api.upload.idempotency-header", reason: "\(idempotencyHeader) is also in api.upload.headers: it would be sent twice")
            }
        }

        var delivered = defaults.delivered
        if let entries = settings.list("delivered") {
            switch DeliveredStatuses.parse(entries) {
            case .success(let statuses): delivered = statuses
            case .failure(let error):
                throw ConfigurationError(
                    key: "api.upload.delivered",
                    reason: error.entry.isEmpty
                        ? "lists no status; expected 2xx or statuses from 200 to 299 (201, 204)"
                        : "expected 2xx or statuses from 200 to 299 (201, 204), got \"\(error.entry)\""
                )
            }
        }

        self.init(
            method: method,
            url: url,
            body: body,
            headers: headers,
            idempotencyHeader: idempotencyHeader,
            delivered: delivered,
            receipt: try Self.receipt(settings),
            parts: try Self.parts(settings, method: method, body: body)
        )
    }

    private static func parts(_ settings: SettingReader, method: Method, body: Body) throws(ConfigurationError) -> Parts? {
        // size and parallel are checked even without above (which sends every file whole).
        let size = try settings.value("parts.size", .size(.between(Parts.minimumSize, Parts.maximumSize)), default: 16 << 20)
        let parallel = try settings.value("parts.parallel", .integer(.between(1, 64)), default: 4)
        guard settings.optionalString("parts.above", default: nil) != nil else { return nil }
        let above = try settings.value("parts.above", ValueType<Int64>.size(.atLeast(Parts.minimumSize)), default: Parts.minimumSize)
        guard method == .put, body == .raw else {
            throw ConfigurationError(key: "api.upload.parts.above", reason: "uploads in parts are S3's: they need api.upload.method PUT and api.upload.body raw")
        }
        return Parts(above: above, size: size, parallel: parallel)
    }

    private static func receipt(_ settings: SettingReader) throws(ConfigurationError) -> Receipt? {
        let pointerKey = "api.upload.receipt.json-pointer"
        let headerKey = "api.upload.receipt.header"
        let valueKey = "api.upload.receipt.value"
        let header = settings.optionalString("receipt.header", default: nil)
        let value = settings.optionalString("receipt.value", default: nil)
        if let header {
            guard isToken(header) else { throw ConfigurationError(key: headerKey, reason: "\"\(header)\" is not a header name (letters, digits, '-')") }
            if settings.isSet("receipt.json-pointer"), settings.optionalString("receipt.json-pointer", default: nil) != nil {
                throw ConfigurationError(key: headerKey, reason: "set either api.upload.receipt.json-pointer or api.upload.receipt.header, not both")
            }
            return .header(name: header, value: try template(value ?? "{sha256}", key: valueKey))
        }
        if let value {
            throw ConfigurationError(key: valueKey, reason: "is set to \"\(value)\" without api.upload.receipt.header to compare it with")
        }
        guard let pointer = settings.optionalString("receipt.json-pointer", default: "/sha256") else { return nil }
        guard pointer.hasPrefix("/") else {
            throw ConfigurationError(key: pointerKey, reason: "expected a JSON pointer (RFC 6901) such as /sha256 or /item/digest, got \"\(pointer)\"")
        }
        return .jsonPointer(pointer)
    }

    private static func template(_ text: String, key: String) throws(ConfigurationError) -> UploadTemplate {
        do {
            return try UploadTemplate.parse(text)
        } catch {
            throw ConfigurationError(key: key, reason: "\"\(text)\": \(error)")
        }
    }

    /// A path (under `api.base-url`) or an http(s) URL once rendered, which holds a placeholder
    /// that tells files apart (for `PUT`: two files must not go to one URL).
    private static func checkURL(_ url: UploadTemplate, text: String, key: String) throws(ConfigurationError) {
        let sample = url.render(UploadItem(sha256: String(repeating: "0", count: 64), name: "file.bin", size: 1))
        if url.isPath {
            guard !sample.contains("#"), !sample.contains(" ") else {
                throw ConfigurationError(key: key, reason: "expected a path starting with / (without # or spaces) or an http(s) URL, got \"\(text)\"")
            }
        } else {
            guard let components = URLComponents(string: sample), let scheme = components.scheme?.lowercased(),
                scheme == "http" || scheme == "https", let host = components.host, !host.isEmpty,
                components.user == nil, components.fragment == nil
            else {
                throw ConfigurationError(key: key, reason: "expected a path starting with / or an http(s) URL with a host (no user:password@ or #fragment), got \"\(text)\"")
            }
            // The sign-in goes where uploads go: a file's name must never choose the host.
            let other = url.render(UploadItem(sha256: String(repeating: "1", count: 64), name: "other.example", size: 2))
            let (first, second) = (RequestTarget(url: sample), RequestTarget(url: other))
            guard first.scheme == second.scheme, first.host == second.host, first.port == second.port else {
                throw ConfigurationError(key: key, reason: "\"\(text)\": a placeholder before the path would let a file's name or content choose the host; put placeholders in the path or query")
            }
        }
    }

    /// An HTTP token (RFC 9110 §5.6.2), as header and field names are.
    private static func isToken(_ text: String) -> Bool {
        !text.isEmpty && text.utf8.allSatisfy { byte in
            (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(byte) || (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains(byte)
                || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) || "!#$%&'*+-.^_`|~".utf8.contains(byte)
        }
    }

    /// Headers errorbusd sets itself.
    private static let reservedHeaders: Set<String> = [
        "authorization", "content-type", "content-length", "transfer-encoding", "host", "connection", "keep-alive",
        "expect", "te", "trailer", "upgrade", "proxy-authorization", "proxy-connection",
    ]
}
