package import Logging

extension DaemonConfiguration {
    /// Logging (`log.*`).
    package struct Log: Sendable, Equatable {
        /// `log.level`: the least severe level logged: `trace`, `debug`, `info`, `notice`,
        /// `warning`, `error` or `critical`. Default `info`.
        package var level: Logger.Level

        /// Creates the section; every setting defaults to the built-in default.
        package init(level: Logger.Level = .info) {
            self.level = level
        }
    }
}
