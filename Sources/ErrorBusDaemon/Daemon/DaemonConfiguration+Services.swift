/// Each service's settings, taken from the daemon's configuration.
extension AuthService.Settings {
    init(_ configuration: DaemonConfiguration) {
        let api = configuration.api
        self.init(
            tokenURL: api.baseURL + api.tokenPath,
            host: api.host,
            realm: api.realm,
            clientID: configuration.auth.clientID,
            clientSecret: configuration.auth.clientSecret.value,
            secretFix: configuration.auth.clientSecretSource.fix,
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
            itemsURL: api.baseURL + api.itemsPath,
            host: api.host,
            realm: api.realm,
            requestTimeout: api.requestTimeout,
            classify: api.classify,
            maxAge: sync.maxAge,
            backlog: sync.backlog,
            deadLetters: sync.deadLetters,
            deliveredRetention: sync.deliveredRetention
        )
    }
}

extension LoaderService.Settings {
    init(_ configuration: DaemonConfiguration) {
        let api = configuration.api
        self.init(
            directory: configuration.loader.directory,
            resources: configuration.loader.resources.map { Resource(name: $0.name, interval: $0.interval) },
            resourcesURL: api.baseURL + api.resourcesPath,
            host: api.host,
            realm: api.realm,
            requestTimeout: api.requestTimeout,
            classify: api.classify
        )
    }
}

/// The service's own name for how delivered files are treated.
typealias AfterDelivery = DaemonConfiguration.Sync.AfterDelivery
