extension DaemonConfiguration {
    /// Where errorbusd keeps its durable state (`state.*`).
    package struct State: Sendable, Equatable {
        /// `state.directory`: the directory of the SQLite store. Default (and when set empty)
        /// `$STATE_DIRECTORY` (systemd's `StateDirectory=`; the first one when it names several),
        /// else `/var/lib/errorbusd`.
        package var directory: String
        /// `state.min-free-space`: the free space the state directory needs before uploads paused
        /// by a full disk resume. Default 16 MiB.
        package var minFreeSpace: Int64

        /// Creates the section; every setting defaults to the built-in default.
        package init(directory: String = "/var/lib/errorbusd", minFreeSpace: Int64 = 16 << 20) {
            self.directory = directory
            self.minFreeSpace = minFreeSpace
        }
    }
}
