extension DaemonConfiguration {
    /// The OAuth 2.0 client credentials (`auth.*`).
    ///
    /// The client secret is never a configuration value: it is read from ``clientSecretFile``
    /// when that is set, else from systemd's credentials directory
    /// (`$CREDENTIALS_DIRECTORY/<credentialName>`, which `LoadCredential=` fills).
    package struct Auth: Sendable, Equatable {
        /// `auth.client-id`: the OAuth client id. Default `errorbus`.
        package var clientID: String
        /// `auth.client-secret-file`: an absolute path to a file holding the client secret.
        /// Default none: the secret comes from `$CREDENTIALS_DIRECTORY`.
        package var clientSecretFile: String?
        /// `auth.credential-name`: the name given to `LoadCredential=`, looked up in
        /// `$CREDENTIALS_DIRECTORY` when ``clientSecretFile`` is not set. Default `client-secret`.
        package var credentialName: String
        /// `auth.refresh-margin`: the access token is refreshed between this long and twice this
        /// long before it expires, at random.
        /// Default 60 s.
        package var refreshMargin: Duration
        /// The client secret, read from its file with trailing newlines removed. Empty only in a
        /// configuration built in code; ``DaemonConfiguration/load(file:environment:)`` never
        /// returns one without a secret.
        package var clientSecret: Secret
        /// Where ``clientSecret`` was read from, and so how a new secret takes effect.
        package var clientSecretSource: SecretSource

        /// Where the client secret comes from.
        package enum SecretSource: Sendable, Equatable {
            /// Set in code, not read from anywhere.
            case given
            /// `auth.client-secret-file`: read again at every reload.
            case file(String)
            /// systemd's credential `name`, a copy `LoadCredential=` made when the service started
            /// (`path` is the copy): a new secret takes effect only at a restart.
            case credential(name: String, path: String)
            /// The file the installed unit loads the credential from, read by `--check-config`
            /// outside the service.
            case credentialSource(name: String, path: String)

            /// What to do about a secret the token endpoint refused, where it came from.
            package var fix: String {
                switch self {
                case .given:
                    "Fix the client secret, then restart errorbusd"
                case .file(let path):
                    "Fix the client secret in \(path), then reload errorbusd (systemctl reload errorbusd or errorbusctl reload)"
                case .credential(let name, _), .credentialSource(let name, _):
                    """
                    Fix the client secret in the file the service loads as credential \"\(name)\" \
                    (\(DaemonConfiguration.Auth.installedCredentialFile) for errorbusd.service), then restart errorbusd \
                    (systemctl restart errorbusd): systemd copies a credential when the service starts, so a reload does not see a new one
                    """
                }
            }
        }

        /// Where the installed `errorbusd.service` loads the client secret from
        /// (`LoadCredential=client-secret:/etc/errorbusd/client-secret`).
        package static let installedCredentialFile = "/etc/errorbusd/client-secret"

        /// Creates the section; every setting defaults to the built-in default.
        package init(
            clientID: String = "errorbus",
            clientSecretFile: String? = nil,
            credentialName: String = "client-secret",
            refreshMargin: Duration = .seconds(60),
            clientSecret: Secret = Secret(""),
            clientSecretSource: SecretSource = .given
        ) {
            self.clientID = clientID
            self.clientSecretFile = clientSecretFile
            self.credentialName = credentialName
            self.refreshMargin = refreshMargin
            self.clientSecret = clientSecret
            self.clientSecretSource = clientSecretSource
        }
    }
}
