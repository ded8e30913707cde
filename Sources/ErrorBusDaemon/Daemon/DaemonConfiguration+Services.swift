import ErrorBusHTTP

/// Each service's settings, taken from the daemon's configuration.
extension AuthService.Settings {
    init(_ configuration: DaemonConfiguration) {
        let api = configuration.api
        let auth = configuration.auth
        let secretFix: String
        if let identity = auth.clientIdentity {
            secretFix = identity.certificateSource.fix("client certificate and key", loadedAtStart: true)
        } else {
            secretFix = auth.secretSource.fix(DaemonConfiguration.Auth.secretKind(of: auth.method)?.what ?? "credentials")
        }
        self.init(
            method: auth.method,
            tokenURL: api.baseURL + api.tokenPath,
            host: api.host,
            realm: api.realm,
            clientID: auth.clientID,
            secret: auth.secret.value,
            user: auth.user,
            signing: auth.method == .awsSigV4
                ? AWSSignatureV4(
                    credentials: .init(accessKeyID: auth.accessKeyID ?? "", secretAccessKey: auth.secret.value, sessionToken: auth.sessionToken?.value),
                    region: auth.region ?? "us-east-1",
                    service: auth.service
                ) : nil,
            secretAccessKeyFile: auth.method == .awsSigV4 ? auth.secretFiles[.secretAccessKey] : nil,
            sessionTokenFile: auth.method == .awsSigV4 ? auth.secretFiles[.sessionToken] : nil,
            secretFix: secretFix,
            refreshMargin: configuration.auth.refreshMargin,
            requestTimeout: api.requestTimeout
        )
    }
}

extension SyncService.Settings {
    init(_ configuration: DaemonConfiguration) {
        let api = configuration.api
        let sync = configuration.sync
        self.init(
            outbox: sync.outbox,
            afterDelivery: sync.afterDelivery,
            concurrency: sync.concurrency,
            maxFileSize: sync.maxFileSize,
            rescanInterval: sync.rescanInterval,
            settleTime: sync.settleTime,
            upload: api.uploadContract,
            scope: api.uploadOrigin,
            realm: api.realm,
            requestTimeout: api.requestTimeout,
            classify: api.classify,
            maxAge: sync.maxAge,
            bandwidth: sync.bandwidth,
            backlog: sync.backlog,
            deadLetters: sync.deadLetters,
            deliveredRetention: sync.deliveredRetention,
            minFreeSpace: configuration.state.minFreeSpace
        )
    }
}

extension LoaderService.Settings {
    init(_ configuration: DaemonConfiguration) {
        let api = configuration.api
        self.init(
            directory: configuration.loader.directory,
            resources: configuration.loader.resources.map { resource in
                let url = resource.url ?? api.baseURL + api.resourcesPath + "/" + resource.name
                return Resource(name: resource.name, url: url, interval: resource.interval, signedIn: api.isOwnOrigin(url))
            },
            realm: api.realm,
            requestTimeout: api.requestTimeout,
            classify: api.classify
        )
    }
}

/// The service's own name for how delivered files are treated.
typealias AfterDelivery = DaemonConfiguration.Sync.AfterDelivery

extension DaemonConfiguration.API {
    /// ``upload``, its URL made absolute.
    package var uploadContract: UploadContract {
        var contract = upload
        contract.url = upload.url(base: baseURL)
        return contract
    }

    /// The origin uploads go to (their scope on the bus): the base URL's, unless the upload URL
    /// names another.
    package var uploadOrigin: String {
        guard !upload.url.isPath else { return RequestTarget(url: baseURL).origin }
        let sample = upload.url.render(UploadItem(sha256: "", name: "", size: 0))
        return RequestTarget(url: sample).origin
    }
}

extension DaemonConfiguration.API {
    /// Whether `url` is on the API's own origin (scheme, host and port of ``baseURL``): the
    /// only URLs the API's credentials are sent to.
    func isOwnOrigin(_ url: String) -> Bool {
        let base = RequestTarget(url: baseURL)
        let other = RequestTarget(url: url)
        return base.scheme == other.scheme && base.host == other.host && base.port == other.port
    }
}
