extension DaemonConfiguration {
    /// The OAuth 2.0 client credentials (`auth.*`).
    ///
    /// The client secret is never a configuration value: it is read from ``clientSecretFile``
    /// when that is set, else from systemd's credentials directory
    /// (`$CREDENTIALS_DIRECTORY/<credentialName>`, which `LoadCredential=` fills).
    public struct Auth: Sendable, Equatable {
        /// `auth.client-id`: the OAuth client id. Default `errorbus`.
        public var clientID: String
        /// `auth.client-secret-file`: an absolute path to a file holding the client secret.
        /// Default none: the secret comes from `$CREDENTIALS_DIRECTORY`.
        public var clientSecretFile: String?
        /// `auth.credential-name`: the name given to `LoadCredential=`, looked up in
        /// `$CREDENTIALS_DIRECTORY` when ``clientSecretFile`` is not set. Default `client-secret`.
        public var credentialName: String
        /// `auth.refresh-margin`: the access token is refreshed this long before it expires.
        /// Default 60 s.
        public var refreshMargin: Duration
        /// The client secret, read from its file with trailing newlines removed. Empty only in a
        /// configuration built in code; ``DaemonConfiguration/load(file:environment:)`` never
        /// returns one without a secret.
        public var clientSecret: Secret

        /// Creates the section; every setting defaults to the built-in default.
        public init(
            clientID: String = "errorbus",
            clientSecretFile: String? = nil,
            credentialName: String = "client-secret",
            refreshMargin: Duration = .seconds(60),
            clientSecret: Secret = Secret("")
        ) {
            self.clientID = clientID
            self.clientSecretFile = clientSecretFile
            self.credentialName = credentialName
            self.refreshMargin = refreshMargin
            self.clientSecret = clientSecret
        }
    }
}
