package import Logging

extension DaemonConfiguration {
    /// Logging (`log.*`).
    package struct Log: Sendable, Equatable {
        /// `log.level`: the least severe level logged: `trace`, `debug`, `info`, `notice`,
        /// `warning`, `error` or `critical`. Default `info`.
        package var level: Logger.Level

        /// `log.target`: where entries go. Default ``Target/auto``.
        package var target: Target

        /// Where log entries go.
        package enum Target: String, Sendable, Equatable, CaseIterable {
            /// Native journal entries when standard error is systemd's journal stream
            /// (`$JOURNAL_STREAM` names it), lines on standard error otherwise.
            case auto
            /// Always native journal entries through the journal's socket
            /// (`/run/systemd/journal/socket`), whoever started errorbusd: a container with a
            /// journald, a supervisor other than systemd. errorbusd does not start without the
            /// socket.
            case journal
            /// Always lines on standard error: `TIME LEVEL MESSAGE FIELD=value …`.
            case stderr
        }

        /// What a ``Target`` resolves to in a process.
        package enum Destination: Sendable, Equatable {
            case journal
            case standardError
        }

        /// Creates the section; every setting defaults to the built-in default.
        package init(level: Logger.Level = .info, target: Target = .auto) {
            self.level = level
            self.target = target
        }

        /// Where entries go, given whether standard error is the journal stream.
        package func destination(standardErrorIsJournal: Bool) -> Destination {
            switch target {
            case .auto: standardErrorIsJournal ? .journal : .standardError
            case .journal: .journal
            case .stderr: .standardError
            }
        }
    }
}
