extension DaemonConfiguration {
    /// Graceful shutdown (`shutdown.*`).
    package struct Shutdown: Sendable, Equatable {
        /// `shutdown.drain-timeout`: on SIGTERM, uploads and fetches in flight get this long to
        /// finish before they are cancelled (their jobs stay queued). Default 10 s.
        package var drainTimeout: Duration

        /// Creates the section; every setting defaults to the built-in default.
        package init(drainTimeout: Duration = .seconds(10)) {
            self.drainTimeout = drainTimeout
        }
    }
}
