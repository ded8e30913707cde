extension DaemonConfiguration {
    /// Where errorbusd keeps its durable state (`state.*`).
    package struct State: Sendable, Equatable {
        /// `state.directory`: the directory of the SQLite store. Default (and when set empty)
        /// `$STATE_DIRECTORY` (systemd's `StateDirectory=`; the first one when it names several),
        /// else `/var/lib/errorbusd`.
        package var directory: String

        /// Creates the section; every setting defaults to the built-in default.
        package init(directory: String = "/var/lib/errorbusd") {
            self.directory = directory
        }
    }
}
