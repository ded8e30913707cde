extension DaemonConfiguration {
    /// The resource loader (`loader.*`).
    public struct Loader: Sendable, Equatable {
        /// `loader.directory`: where local copies are written, each as `directory/name`, replaced
        /// atomically. Default `/var/lib/errorbusd/resources`.
        public var directory: String
        /// `loader.resources`: the remote resources to keep fresh. Default none.
        ///
        /// In YAML a list of `NAME=INTERVAL` strings (`- motd.txt=5m`); in the environment the
        /// same, comma-separated (`ERRORBUSD_LOADER_RESOURCES=motd.txt=5m,flags.json=30s`).
        public var resources: [Resource]

        /// One remote resource.
        public struct Resource: Sendable, Equatable {
            /// The resource's name: fetched from `resourcesPath/name`, stored as
            /// `directory/name`. Letters, digits, `.`, `_` and `-`, not starting with `.`.
            public var name: String
            /// How often it is fetched (conditionally) again; at least 1 s.
            public var interval: Duration

            /// Creates the resource.
            public init(name: String, interval: Duration) {
                self.name = name
                self.interval = interval
            }
        }

        /// Creates the section; every setting defaults to the built-in default.
        public init(directory: String = "/var/lib/errorbusd/resources", resources: [Resource] = []) {
            self.directory = directory
            self.resources = resources
        }
    }
}
