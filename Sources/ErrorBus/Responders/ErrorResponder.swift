/// A link in a service's responder chain: it may handle a failure and answer, rewrite
/// it, or pass it on. Failures no responder handles get the bus's default policy.
///
/// Responders run on the bus for every failure of their service, so they must be quick and must
/// not block.
public protocol ErrorResponder: Sendable {
    /// Answers a failure of the service this responder is connected to. `job` is `nil` for
    /// failures reported with ``ErrorBus/report(_:)``.
    func respond(to failure: Failure, job: Job?) -> ResponderAnswer
}

/// What a responder makes of a failure.
public enum ResponderAnswer: Sendable {
    /// Not mine: ask the next responder, then the default policy.
    case pass
    /// Handled: the caller gets this evaluation (`retry` makes the bus run the job again now,
    /// within the retry budget).
    case handle(Evaluation)
    /// Continue with this failure instead (another category, better operator text).
    case rewrite(Failure)
}

/// A responder made of a closure.
public struct ClosureResponder: ErrorResponder {
    private let body: @Sendable (Failure, Job?) -> ResponderAnswer

    public init(_ body: @escaping @Sendable (Failure, Job?) -> ResponderAnswer) {
        self.body = body
    }

    public func respond(to failure: Failure, job: Job?) -> ResponderAnswer {
        body(failure, job)
    }
}

/// Identifies a connected responder, to disconnect it.
public struct ResponderConnection: Sendable, Hashable {
    public let service: String
    let id: UInt64
}
