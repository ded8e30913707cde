/// A responder's answer to a failure, and what a caller is told to do.
public enum Evaluation: String, Sendable, Hashable, CaseIterable, CustomStringConvertible {
    /// Handled; carry on as is natural (e.g. keep the last good copy).
    case proceed
    /// Run the operation again now. The bus does this itself, within the retry budget.
    case retry
    /// Stop this job and stay put.
    case cancel
    /// The failure is too severe: the service must stop.
    case abort

    public var description: String { rawValue }
}
