/// An error that knows its category, its cause and how to explain itself to an operator.
///
/// Errors that do not conform are categorised by the bus's fallback (the `fallback` of
/// ``ErrorBus/ErrorBus/init(configuration:clock:probe:authenticator:random:fallback:logger:)``).
public protocol CategorizedError: Error {
    /// Which policy the bus runs for this failure.
    var category: ErrorCategory { get }

    /// A short, stable code for what went wrong, e.g. `"connectionRefused"` or `"http503"`.
    ///
    /// Part of the fingerprint: failures with the same scope, category and cause are one incident.
    /// Keep job-specific details out of it.
    var cause: String { get }

    /// The scope the failure applies to, when it is not the default for its category.
    ///
    /// By default the bus uses the job's ``Job/scope`` for network categories and `invalid`, the
    /// job's ``Job/realm`` for `unauthenticated`, and the job's ``Job/service`` for `fatal`.
    var scope: String? { get }

    /// What an operator reads about this failure.
    var operatorText: OperatorText { get }
}

extension CategorizedError {
    public var scope: String? { nil }
}
