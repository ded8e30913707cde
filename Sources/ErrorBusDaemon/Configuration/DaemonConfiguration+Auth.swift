package import NIOSSL

extension DaemonConfiguration {
    /// How errorbusd signs in to the API (`auth.*`).
    ///
    /// Secrets are never configuration values. Each is read from its `-file` key when that is set
    /// (read again at every reload), else from systemd's credentials directory
    /// (`$CREDENTIALS_DIRECTORY/<name>`, which `LoadCredential=` fills): the client secret from the
    /// credential ``credentialName``, a bearer token from `token`, a basic password from
    /// `password`, a client certificate and key from `client-certificate` and `client-key`.
    package struct Auth: Sendable, Equatable {
        /// `auth.method`.
        package enum Method: String, Sendable, Equatable, CaseIterable {
            /// OAuth 2.0 client credentials (RFC 6749 §4.4): a token from `api.token-path`, renewed
            /// before it expires and once per realm when the API refuses it.
            case oauth2ClientCredentials = "oauth2-client-credentials"
            /// A static token, sent as `Authorization: Bearer`.
            case bearer
            /// HTTP Basic (RFC 7617): ``Auth/user`` and a password.
            case basic
            /// A TLS client certificate and key; the API's CA is `api.ca-file`.
            case mtls
            /// AWS Signature Version 4, as object storage speaking the S3 API asks: every request
            /// signed with the secret access key of ``Auth/accessKeyID``.
            case awsSigV4 = "aws-sigv4"
            /// No sign-in.
            case none
        }

        /// `auth.method`. Default `oauth2-client-credentials`.
        package var method: Method
        /// `auth.client-id`: the OAuth client id. Default `errorbus`.
        package var clientID: String
        /// `auth.credential-name`: the name given to `LoadCredential=` for the client secret,
        /// looked up in `$CREDENTIALS_DIRECTORY` when `auth.client-secret-file` is not set.
        /// Default `client-secret`.
        package var credentialName: String
        /// `auth.refresh-margin`: the access token is refreshed between this long and twice this
        /// long before it expires, at random.
        /// Default 60 s.
        package var refreshMargin: Duration
        /// `auth.user`: the user of `basic`. Default none.
        package var user: String?
        /// `auth.access-key-id`: the access key `aws-sigv4` signs with. Default none.
        package var accessKeyID: String?
        /// `auth.region`: the region `aws-sigv4` signs for (`us-east-1`, or what the object
        /// store calls its region). Default none.
        package var region: String?
        /// `auth.service`: the service `aws-sigv4` signs for. Default `s3`.
        package var service: String
        /// `aws-sigv4`: the session token of temporary credentials, when there is one
        /// (`auth.session-token-file`, or the credential `session-token`).
        package var sessionToken: Secret?
        /// `auth.client-secret-file`, `auth.token-file`, `auth.password-file`,
        /// `auth.client-certificate-file`, `auth.client-key-file`, `auth.secret-access-key-file`,
        /// `auth.session-token-file`: absolute paths of files the
        /// secrets are read from instead of their credentials. Default none.
        package var secretFiles: [SecretKind: String]
        /// The method's secret: the client secret, the bearer token, the basic password or the
        /// secret access key, with trailing newlines removed. Empty for `mtls` and `none`, and in a configuration built in
        /// code; ``DaemonConfiguration/load(file:environment:)`` never returns a method without its
        /// secret.
        package var secret: Secret
        /// Where ``secret`` was read from, and so how a new one takes effect.
        package var secretSource: SecretSource
        /// `mtls`: the client certificate (PEM, the chain) and its private key (PEM).
        package var clientIdentity: ClientIdentity?

        /// The secrets a method reads.
        package enum SecretKind: String, Sendable, Equatable, Hashable, CaseIterable {
            case clientSecret = "client-secret"
            case token
            case password
            case clientCertificate = "client-certificate"
            case clientKey = "client-key"
            case secretAccessKey = "secret-access-key"
            case sessionToken = "session-token"

            /// The key naming a file to read it from.
            package var fileKey: String { "auth.\(rawValue)-file" }

            /// What it is, for messages.
            package var what: String {
                switch self {
                case .clientSecret: "client secret"
                case .token: "bearer token"
                case .password: "password"
                case .clientCertificate: "client certificate"
                case .clientKey: "client key"
                case .secretAccessKey: "secret access key"
                case .sessionToken: "session token"
                }
            }
        }

        /// A TLS client certificate chain and its key.
        package struct ClientIdentity: Sendable, Equatable {
            /// The certificate first, then any intermediates.
            package var certificateChain: [NIOSSLCertificate]
            package var privateKey: NIOSSLPrivateKey
            /// Where the certificate was read from, for messages.
            package var certificateSource: SecretSource

            package init(certificateChain: [NIOSSLCertificate], privateKey: NIOSSLPrivateKey, certificateSource: SecretSource) {
                self.certificateChain = certificateChain
                self.privateKey = privateKey
                self.certificateSource = certificateSource
            }
        }

        /// Where a secret comes from.
        package enum SecretSource: Sendable, Equatable {
            /// Set in code, not read from anywhere.
            case given
            /// A `-file` key: read again at every reload.
            case file(String)
            /// systemd's credential `name`, a copy `LoadCredential=` made when the service started
            /// (`path` is the copy): a new secret takes effect only at a restart.
            case credential(name: String, path: String)
            /// The file the installed unit loads the credential from, read by `--check-config`
            /// outside the service.
            case credentialSource(name: String, path: String)

            /// What to do about a secret the API refused, where it came from.
            ///
            /// - Parameter loadedAtStart: whether a file's new content takes a restart rather than a
            ///   reload (a client certificate, which the HTTP client holds).
            package func fix(_ what: String = "client secret", loadedAtStart: Bool = false) -> String {
                switch self {
                case .given:
                    "Fix the \(what), then restart errorbusd"
                case .file(let path) where loadedAtStart:
                    "Fix the \(what) in \(path), then restart errorbusd (systemctl restart errorbusd)"
                case .file(let path):
                    "Fix the \(what) in \(path), then reload errorbusd (systemctl reload errorbusd or errorbusctl reload)"
                case .credential(let name, _), .credentialSource(let name, _):
                    """
                    Fix the \(what) in the file the service loads as credential \"\(name)\" \
                    (\(DaemonConfiguration.Auth.credentialFile(name)) for errorbusd.service), then restart errorbusd \
                    (systemctl restart errorbusd): systemd copies a credential when the service starts, so a reload does not see a new one
                    """
                }
            }
        }

        /// Where the installed `errorbusd.service` loads the client secret from
        /// (`LoadCredential=client-secret:/etc/errorbusd/client-secret`).
        package static let installedCredentialFile = credentialFile("client-secret")

        /// Where an installation keeps credential `name` for `LoadCredential=`, by convention.
        package static func credentialFile(_ name: String) -> String { "/etc/errorbusd/" + name }

        /// The secret ``secret`` holds for `method`, if any.
        package static func secretKind(of method: Method) -> SecretKind? {
            switch method {
            case .oauth2ClientCredentials: .clientSecret
            case .bearer: .token
            case .basic: .password
            case .awsSigV4: .secretAccessKey
            case .mtls, .none: nil
            }
        }

        /// Creates the section; every setting defaults to the built-in default.
        package init(
            method: Method = .oauth2ClientCredentials,
            clientID: String = "errorbus",
            credentialName: String = "client-secret",
            refreshMargin: Duration = .seconds(60),
            user: String? = nil,
            accessKeyID: String? = nil,
            region: String? = nil,
            service: String = "s3",
            sessionToken: Secret? = nil,
            secretFiles: [SecretKind: String] = [:],
            secret: Secret = Secret(""),
            secretSource: SecretSource = .given,
            clientIdentity: ClientIdentity? = nil
        ) {
            self.method = method
            self.clientID = clientID
            self.credentialName = credentialName
            self.refreshMargin = refreshMargin
            self.user = user
            self.accessKeyID = accessKeyID
            self.region = region
            self.service = service
            self.sessionToken = sessionToken
            self.secretFiles = secretFiles
            self.secret = secret
            self.secretSource = secretSource
            self.clientIdentity = clientIdentity
        }
    }
}
