extension DaemonConfiguration {
    /// The resource loader (`loader.*`).
    package struct Loader: Sendable, Equatable {
        /// `loader.directory`: where local copies are written, each as `directory/name`, replaced
        /// atomically. Default `/var/lib/errorbusd/resources`.
        package var directory: String
        /// `loader.resources`: the remote resources to keep fresh. Default none.
        ///
        /// In YAML a list of `NAME=INTERVAL` or `URL=INTERVAL` strings (`- motd.txt=5m`,
        /// `- https://cdn.example.com/flags.json=30s`); in the environment the same,
        /// comma-separated (`ERRORBUSD_LOADER_RESOURCES=motd.txt=5m,flags.json=30s`).
        package var resources: [Resource]

        /// One remote resource.
        package struct Resource: Sendable, Equatable {
            /// The resource's name: stored as `directory/name`, and fetched from
            /// `resourcesPath/name` unless ``url`` says otherwise. Letters, digits, `.`, `_` and `-`,
            /// not starting with `.`.
            package var name: String
            /// A whole URL to fetch it from (its last path segment is ``name``); `nil` for a
            /// resource under `api.resources-path`.
            package var url: String?
            /// How often it is fetched (conditionally) again; at least 1 s.
            package var interval: Duration

            /// Creates the resource.
            package init(name: String, url: String? = nil, interval: Duration) {
                self.name = name
                self.url = url
                self.interval = interval
            }
        }

        /// Creates the section; every setting defaults to the built-in default.
        package init(directory: String = "/var/lib/errorbusd/resources", resources: [Resource] = []) {
            self.directory = directory
            self.resources = resources
        }
    }
}
