public import Logging

extension DaemonConfiguration {
    /// Logging (`log.*`).
    public struct Log: Sendable, Equatable {
        /// `log.level`: the least severe level logged: `trace`, `debug`, `info`, `notice`,
        /// `warning`, `error` or `critical`. Default `info`.
        public var level: Logger.Level

        /// Creates the section; every setting defaults to the built-in default.
        public init(level: Logger.Level = .info) {
            self.level = level
        }
    }
}
