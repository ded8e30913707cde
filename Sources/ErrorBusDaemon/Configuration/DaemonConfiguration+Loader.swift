extension DaemonConfiguration {
    /// The resource loader (`loader.*`).
    package struct Loader: Sendable, Equatable {
        /// `loader.directory`: where local copies are written, each as `directory/name`, replaced
        /// atomically. Default `/var/lib/errorbusd/resources`.
        package var directory: String
        /// `loader.resources`: the remote resources to keep fresh. Default none.
        ///
        /// In YAML a list of `NAME=INTERVAL` strings (`- motd.txt=5m`); in the environment the
        /// same, comma-separated (`ERRORBUSD_LOADER_RESOURCES=motd.txt=5m,flags.json=30s`).
        package var resources: [Resource]

        /// One remote resource.
        package struct Resource: Sendable, Equatable {
            /// The resource's name: fetched from `resourcesPath/name`, stored as
            /// `directory/name`. Letters, digits, `.`, `_` and `-`, not starting with `.`.
            package var name: String
            /// How often it is fetched (conditionally) again; at least 1 s.
            package var interval: Duration

            /// Creates the resource.
            package init(name: String, interval: Duration) {
                self.name = name
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
