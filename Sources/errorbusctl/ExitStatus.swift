import ArgumentParser

/// The exit codes a script can rely on (listed in `errorbusctl --help`).
enum ExitStatus {
    /// The daemon answered with another error.
    static let failure = ExitCode(1)
    /// No such incident, job or service.
    static let notFound = ExitCode(4)
    /// Invalid arguments (swift-argument-parser's own code for them).
    static let usage = ExitCode.validationFailure
    /// Nothing listens on the socket (`EX_UNAVAILABLE`).
    static let notRunning = ExitCode(69)
    /// errorbusd runs but did not answer within `--timeout` (`EX_TEMPFAIL`: trying again later
    /// may work).
    static let timedOut = ExitCode(75)
    /// Not allowed to open the socket or call the method (`EX_NOPERM`).
    static let permissionDenied = ExitCode(77)
    /// errorbusd cannot run with its configuration (`EX_CONFIG`, the status errorbusd itself
    /// exits with then).
    static let configurationUnusable = ExitCode(78)
}
