extension DaemonConfiguration {
    /// Graceful shutdown (`shutdown.*`).
    public struct Shutdown: Sendable, Equatable {
        /// `shutdown.drain-timeout`: on SIGTERM, uploads and fetches in flight get this long to
        /// finish before they are cancelled (their jobs stay queued). Default 10 s.
        public var drainTimeout: Duration

        /// Creates the section; every setting defaults to the built-in default.
        public init(drainTimeout: Duration = .seconds(10)) {
            self.drainTimeout = drainTimeout
        }
    }
}
