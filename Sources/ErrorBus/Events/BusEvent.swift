/// Something that happened on the bus: an incident's lifecycle step, a dead letter, an overflow.
///
/// Failures that join an open incident produce no event: one cause, a handful of events, however
/// many failures.
public struct BusEvent: Sendable {
    public var kind: Kind
    /// The incident as it stands after the event, for incident events.
    public var incident: IncidentSnapshot?
    /// The job concerned, for job events (dead letter, overflow).
    public var job: Job?
    /// Why, in an operator's words, where the kind calls for it (a failed probe's reason, an
    /// overflow's limit, an escalation's cause).
    public var reason: String?
    /// For ``Kind/budgetExhausted``: how long until the waiting retry may go.
    public var delay: Duration?

    public init(
        kind: Kind,
        incident: IncidentSnapshot? = nil,
        job: Job? = nil,
        reason: String? = nil,
        delay: Duration? = nil
    ) {
        self.kind = kind
        self.incident = incident
        self.job = job
        self.reason = reason
        self.delay = delay
    }

    /// What kind of event it is. New kinds may be added; match the ones you need.
    public struct Kind: RawRepresentable, Sendable, Hashable, CustomStringConvertible {
        public let rawValue: String
        public init(rawValue: String) { self.rawValue = rawValue }
        public var description: String { rawValue }

        /// A failure with a new fingerprint opened an incident.
        public static let incidentOpened = Kind(rawValue: "incidentOpened")
        /// The incident's policy scheduled its next step (``IncidentSnapshot/next``).
        public static let policyScheduled = Kind(rawValue: "policyScheduled")
        /// A reachability probe failed (``reason`` says why).
        public static let probeFailed = Kind(rawValue: "probeFailed")
        /// A canary job failed with the incident's cause.
        public static let canaryFailed = Kind(rawValue: "canaryFailed")
        /// Re-authentication for the incident's realm started.
        public static let reauthStarted = Kind(rawValue: "reauthStarted")
        /// Nothing automatic can help any more: the incident needs an operator (``reason``).
        public static let escalated = Kind(rawValue: "escalated")
        /// The cause is gone; parked jobs are being released.
        public static let releaseStarted = Kind(rawValue: "releaseStarted")
        /// Its scope serves some requests and refuses others: the incident paces
        /// (``IncidentState/pacing``) instead of holding the scope (``reason``: the refusal).
        public static let pacingStarted = Kind(rawValue: "pacingStarted")
        /// A released job met the cause again: release stopped, the rest stay parked.
        public static let releaseStopped = Kind(rawValue: "releaseStopped")
        /// The incident is over (``IncidentSnapshot/resolution``), with the failures it absorbed,
        /// the jobs it released and how long it lasted.
        public static let incidentResolved = Kind(rawValue: "incidentResolved")
        /// A job's failures were found to be its own (``job``): it left its scope's incident for
        /// an incident of its own (``incident``). A service that keeps its jobs across restarts
        /// records it, and submits the job again with ``Job/failedOnItsOwn``.
        public static let jobIsolated = Kind(rawValue: "jobIsolated")
        /// A job was set aside as a dead letter (``job``, ``reason``).
        public static let jobDeadLettered = Kind(rawValue: "jobDeadLettered")
        /// A due retry found the retry budget empty and waits (``delay``).
        public static let budgetExhausted = Kind(rawValue: "budgetExhausted")
        /// Parking was full: the job was stopped instead of parked (``job``, ``reason``).
        public static let parkingOverflow = Kind(rawValue: "parkingOverflow")
        /// A responder answered `abort` for a job: its service must stop.
        public static let serviceAborted = Kind(rawValue: "serviceAborted")
    }
}
