/// Why a job ended without its operation succeeding, and what its caller should do.
///
/// Thrown by ``ErrorBus/perform(_:operation:)`` and delivered to ``ErrorBus/submit(_:operation:completion:)``
/// completions.
public struct JobStopped: Error, Sendable, CustomStringConvertible {
    /// What the caller should do: `proceed`, `cancel` or `abort` (never `retry`: the bus retries
    /// by itself).
    public var evaluation: Evaluation
    /// Why the job stopped.
    public var reason: Reason
    /// The failure that stopped it, when there was one.
    public var failure: Failure?
    /// The incident the job belonged to, when there was one.
    public var incident: IncidentID?

    public init(evaluation: Evaluation, reason: Reason, failure: Failure? = nil, incident: IncidentID? = nil) {
        self.evaluation = evaluation
        self.reason = reason
        self.failure = failure
        self.incident = incident
    }

    public var description: String {
        var text = "\(evaluation): \(reason)"
        if let failure { text += " — \(failure.text.title): \(failure.text.message)" }
        return text
    }

    /// Why a job stopped.
    public struct Reason: Sendable, Hashable, CustomStringConvertible {
        private enum Code: String, Sendable, Hashable {
            case handledByResponder
            case deadLettered
            case discarded
            case cancelledByOperator
            case parkingFull
            case taskCancelled
            case shutdown
            case expired
            case attemptsExhausted
            case held
            case superseded
        }

        private let code: Code

        private init(_ code: Code) { self.code = code }

        /// A responder of the job's service handled the failure and answered.
        public static let handledByResponder = Reason(.handledByResponder)
        /// The failure was `invalid`: the job will fail the same way again and was set aside.
        public static let deadLettered = Reason(.deadLettered)
        /// An operator discarded the incident the job was parked under.
        public static let discarded = Reason(.discarded)
        /// An operator cancelled the job.
        public static let cancelledByOperator = Reason(.cancelledByOperator)
        /// The bus already holds as many parked jobs as it may (``ErrorBusConfiguration/maxParkedJobs``).
        public static let parkingFull = Reason(.parkingFull)
        /// The caller's task was cancelled.
        public static let taskCancelled = Reason(.taskCancelled)
        /// The bus stopped running.
        public static let shutdown = Reason(.shutdown)
        /// The job's ``Job/expiresAfter`` passed before it succeeded.
        public static let expired = Reason(.expired)
        /// The job failed as many runs as its ``Job/maxAttempts`` allows.
        public static let attemptsExhausted = Reason(.attemptsExhausted)
        /// An incident holds the job back, or its retry would wait for the retry budget, and
        /// the job may not wait (``Job/WhenHeld/failFast``): ``JobStopped/incident`` names the
        /// incident, if one holds it.
        public static let held = Reason(.held)
        /// The operation found that its work was replaced by newer work, and ended the job by
        /// throwing a ``JobStopped`` with this reason (and a ``JobStopped/failure`` saying what
        /// replaced it): nothing to retry and nothing to set aside, and no incident opens.
        public static let superseded = Reason(.superseded)

        public var description: String { code.rawValue }
    }
}
