/// What an operator reads about a failure: a short title, what happened in plain words, and
/// what will happen next or what to do.
///
/// Never "An error occurred", never a wall of debug text: the underlying error stays available
/// on ``Failure/error`` for logs, this is for people.
public struct OperatorText: Sendable, Hashable {
    /// A few words, e.g. "API unreachable".
    public var title: String
    /// What happened, e.g. "Could not connect to api.example.net: connection refused."
    public var message: String
    /// What happens next or what to do, e.g. "Uploads wait and resume when the API answers."
    /// When `nil`, the bus supplies the default for the failure's category.
    public var next: String?

    public init(title: String, message: String, next: String? = nil) {
        self.title = title
        self.message = message
        self.next = next
    }
}

extension OperatorText: CustomStringConvertible {
    public var description: String {
        if let next { "\(title): \(message) \(next)" } else { "\(title): \(message)" }
    }
}

extension ErrorCategory.Kind {
    /// What the bus will do about a failure of this kind, in an operator's words.
    public var defaultNextStep: String {
        switch self {
        case .unreachable: "Work for it waits and resumes as soon as a probe reaches it again."
        case .rateLimited: "Work for it waits as long as the server asked, then resumes with one request."
        case .transient: "Work for it backs off and resumes once a single trial request succeeds."
        case .unauthenticated: "The daemon signs in again once and then resubmits the waiting work."
        case .invalid: "The job was set aside as a dead letter; retry or discard it once the cause is fixed."
        case .fatal: "The service is paused until the condition clears or an operator resumes it."
        }
    }
}
