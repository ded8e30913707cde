/// A unit of work a service runs through the bus, e.g. one upload.
///
/// The bus needs to know whose work it is (``service``), where it goes (``scope``, usually the
/// API's host) and which credentials it uses (``realm``), so that one outage, one rate limit or
/// one expired token holds back exactly the work it concerns.
public struct Job: Sendable, Hashable, Identifiable, CustomStringConvertible {
    /// Identifies the job within its service, e.g. the outbox item's id.
    public var id: String
    /// The service that owns the job, e.g. `"sync"`.
    public var service: String
    /// Where the job's requests go: the endpoint's host for network work.
    public var scope: String
    /// The authentication realm whose credentials the job uses, if any.
    public var realm: String?
    /// How long the bus may take to get the job done, counted on the bus's clock from
    /// ``ErrorBus/perform(_:operation:)`` or ``ErrorBus/submit(_:operation:completion:)``: a job
    /// still held then (parked, or waiting for the retry budget) ends with
    /// ``JobStopped/Reason/expired``, and a job found expired when its turn comes is not run.
    /// A run under way is not interrupted. `nil`: no limit.
    public var expiresAfter: Duration?
    /// How many times the operation may run: a job that failed that many runs ends with
    /// ``JobStopped/Reason/attemptsExhausted`` instead of being parked or retried again. The
    /// failure still counts into its incident. `nil`: no limit.
    public var maxAttempts: Int?
    /// What the bus does with the job while an incident holds it back.
    public var whenHeld: WhenHeld

    /// What the bus does with a job that an incident holds back.
    public enum WhenHeld: Sendable, Hashable {
        /// Park it under the incident until the incident's cause is gone (the default: work that
        /// may wait).
        case park
        /// End it at once with ``JobStopped/Reason/held`` and the incident's id, without running
        /// it when its scope is held, and without parking it when it fails: for requests that
        /// must answer quickly. Its failures still open and join incidents, so the jobs that
        /// may wait are held back as usual.
        case failFast
    }

    public init(
        id: String,
        service: String,
        scope: String,
        realm: String? = nil,
        expiresAfter: Duration? = nil,
        maxAttempts: Int? = nil,
        whenHeld: WhenHeld = .park
    ) {
        precondition(maxAttempts.map { $0 > 0 } ?? true, "a job's maxAttempts must be at least 1")
        self.id = id
        self.service = service
        self.scope = scope
        self.realm = realm
        self.expiresAfter = expiresAfter
        self.maxAttempts = maxAttempts
        self.whenHeld = whenHeld
    }

    public var description: String { "\(service)/\(id)" }

    /// The scope a failure of this kind applies to when its error names none.
    func defaultScope(for kind: ErrorCategory.Kind) -> String {
        switch kind.scopeKind {
        case .host: scope
        case .realm: realm ?? scope
        case .service: service
        }
    }
}
