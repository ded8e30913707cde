extension DaemonConfiguration {
    /// The Varlink control socket `errorbusctl` talks to (`control.*`).
    public struct Control: Sendable, Equatable {
        /// The socket's file name in the runtime directory.
        public static let socketName = "io.errorbus.Control"

        /// `control.socket-path`: the Unix socket's path (at most 107 bytes). Default (and when
        /// set empty) `$RUNTIME_DIRECTORY/io.errorbus.Control` (systemd's `RuntimeDirectory=`),
        /// else `/run/errorbusd/io.errorbus.Control`.
        public var socketPath: String
        /// `control.group`: besides root, members of this group may call mutating methods
        /// (retry, discard, pause, …); `nil` (an empty value) leaves them to root. Default
        /// `errorbus`.
        public var group: String?
        /// `control.max-connections`: at most this many clients at once. Default 256.
        public var maxConnections: Int

        /// Creates the section; every setting defaults to the built-in default.
        public init(
            socketPath: String = "/run/errorbusd/" + Control.socketName,
            group: String? = "errorbus",
            maxConnections: Int = 256
        ) {
            self.socketPath = socketPath
            self.group = group
            self.maxConnections = maxConnections
        }
    }
}
