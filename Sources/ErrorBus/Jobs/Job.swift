import Synchronization

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
    /// What people call the job (a file's name, a resource's), for the texts that tell of it;
    /// `nil`: its ``description``.
    public var name: String?
    /// How long the bus may take to get the job done, counted on the bus's clock from
    /// ``ErrorBus/perform(_:operation:)`` or ``ErrorBus/submit(_:operation:completion:)``: a job
    /// still held then (parked, or waiting for the retry budget) ends with
    /// ``JobStopped/Reason/expired``, and a job found expired when its turn comes is not run.
    /// A run under way is not interrupted. `nil`: no limit.
    public var expiresAfter: Duration? {
        get { limits?.value.expiresAfter }
        set { updateLimits { $0.expiresAfter = newValue } }
    }
    /// How many times the operation may run: a job that failed that many runs ends with
    /// ``JobStopped/Reason/attemptsExhausted`` instead of being parked or retried again. The
    /// failure still counts into its incident. `nil`: no limit. A job whose limit is below 1 is
    /// refused: it ends at once, never run, with ``JobStopped/Reason/attemptsExhausted`` and an
    /// `invalid` failure saying why.
    public var maxAttempts: Int? {
        get { limits?.value.maxAttempts }
        set { updateLimits { $0.maxAttempts = newValue } }
    }
    /// What the bus does with the job while an incident holds it back.
    public var whenHeld: WhenHeld {
        get { limits?.value.whenHeld ?? .park }
        set { updateLimits { $0.whenHeld = newValue } }
    }
    /// How many times the job already failed on its own before this submission: its owner kept
    /// it across a restart of the bus (``BusEvent/Kind/jobIsolated`` tells when the bus sets a job
    /// aside). A job with any goes to an incident of its own at its next failure, where it
    /// continues its count toward ``ErrorBusConfiguration/Isolation/maxAttempts``, instead of
    /// being taken for its scope's failure again. 0: none.
    public var failedOnItsOwn: Int {
        get { limits?.value.failedOnItsOwn ?? 0 }
        set { updateLimits { $0.failedOnItsOwn = max(0, newValue) } }
    }

    /// The job's limits, boxed: most jobs have none, and a parked job costs one pointer for them
    /// rather than the 40 bytes they take inline. The bus keeps in the box what it needs to
    /// apply them to one submission of the job (``startingLimits(at:)``).
    private(set) var limits: LimitsBox?

    struct Limits: Hashable, Sendable {
        var expiresAfter: Duration?
        var maxAttempts: Int?
        var whenHeld = WhenHeld.park
        var failedOnItsOwn = 0
    }

    /// A job's limits, and once the bus took the job, their state for that submission. Equal
    /// by the limits alone.
    final class LimitsBox: Hashable, Sendable {
        let value: Limits
        /// When the job ends unless it succeeded by then.
        let expiresAt: TimelineInstant?
        /// The runs of the operation so far.
        let runs = Atomic<Int>(0)
        /// Whether the bus already waits for ``expiresAt`` to end the job if it still holds it.
        let expiryScheduled = Atomic<Bool>(false)

        init(_ value: Limits, expiresAt: TimelineInstant? = nil) {
            self.value = value
            self.expiresAt = expiresAt
        }

        static func == (lhs: LimitsBox, rhs: LimitsBox) -> Bool { lhs.value == rhs.value }
        func hash(into hasher: inout Hasher) { hasher.combine(value) }
    }

    /// The job as the bus holds it for one submission at `now`: with a box of its own, whose
    /// expiry is counted from `now`, if it has limits.
    func startingLimits(at now: () -> TimelineInstant) -> Job {
        guard let limits else { return self }
        var job = self
        job.limits = LimitsBox(limits.value, expiresAt: limits.value.expiresAfter.map { now().advanced(by: $0) })
        return job
    }

    private mutating func updateLimits(_ change: (inout Limits) -> Void) {
        var value = limits?.value ?? Limits()
        change(&value)
        limits = value == Limits() ? nil : LimitsBox(value)
    }

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
        name: String? = nil,
        expiresAfter: Duration? = nil,
        maxAttempts: Int? = nil,
        whenHeld: WhenHeld = .park
    ) {
        self.id = id
        self.service = service
        self.scope = scope
        self.realm = realm
        self.name = name
        if expiresAfter != nil || maxAttempts != nil || whenHeld != .park {
            self.expiresAfter = expiresAfter
            self.maxAttempts = maxAttempts
            self.whenHeld = whenHeld
        }
    }

    public var description: String { "\(service)/\(id)" }

    /// The job as a text tells of it: its ``name``, or its ``description``.
    var shownName: String { name ?? description }

    /// The scope a failure of this kind applies to when its error names none.
    func defaultScope(for kind: ErrorCategory.Kind) -> String {
        switch kind.scopeKind {
        case .host, .serviceAtHost: scope
        case .realm: realm ?? scope
        case .service: service
        }
    }
}
