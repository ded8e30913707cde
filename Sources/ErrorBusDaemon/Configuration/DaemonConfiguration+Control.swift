extension DaemonConfiguration {
    /// The Varlink control socket `errorbusctl` talks to (`control.*`).
    package struct Control: Sendable, Equatable {
        /// The socket's file name in the runtime directory.
        package static let socketName = "io.errorbus.Control"

        /// `control.socket-path`: the Unix socket's path (at most 107 bytes). Default (and when
        /// set empty) `$RUNTIME_DIRECTORY/io.errorbus.Control` (systemd's `RuntimeDirectory=`),
        /// else `/run/errorbusd/io.errorbus.Control`.
        package var socketPath: String
        /// `control.group`: besides root, members of this group may call mutating methods
        /// (retry, discard, pause, …); `nil` (an empty value) leaves them to root. Default
        /// `errorbus`.
        package var group: String?
        /// `control.max-connections`: at most this many clients at once. Default 256. The last
        /// eighth of them (``reservedConnections``) is kept for root and `control.group`.
        package var maxConnections: Int
        /// `control.max-connections-per-user`: at most this many clients of one user at once,
        /// except root and members of `control.group`. Default 16.
        package var maxConnectionsPerUser: Int

        /// The connections only root and `control.group` may use: an eighth of
        /// ``maxConnections``, at least one, so that other local users cannot lock them out.
        package var reservedConnections: Int { max(1, maxConnections / 8) }

        /// Creates the section; every setting defaults to the built-in default.
        package init(
            socketPath: String = "/run/errorbusd/" + Control.socketName,
            group: String? = "errorbus",
            maxConnections: Int = 256,
            maxConnectionsPerUser: Int = 16
        ) {
            self.socketPath = socketPath
            self.group = group
            self.maxConnections = maxConnections
            self.maxConnectionsPerUser = maxConnectionsPerUser
        }
    }
}
