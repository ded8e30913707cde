#if canImport(FoundationEssentials)
public import FoundationEssentials
#else
public import Foundation
#endif

/// An incident as a status display shows it: what, where, how much, what next.
public struct IncidentSnapshot: Sendable, Identifiable {
    public var id: IncidentID
    /// A random UUID made when the bus opened the incident, kept for its whole life (a cause
    /// coming back while it settles is the same incident, with the same UUID). ``id`` is a
    /// number each bus counts from ``ErrorBusConfiguration/firstIncidentID``, so two hosts both
    /// have an incident 2; the UUID tells an incident apart from every other one on any host, in
    /// any run: a key to gather an incident's story from many hosts' logs.
    public var uuid: UUID
    public var fingerprint: Fingerprint
    /// The category as last seen (e.g. with the latest `Retry-After` hint).
    public var category: ErrorCategory
    /// The service whose failure opened the incident.
    public var service: String
    /// What an operator reads about it: the failure that opened it, or the reason it now needs
    /// an operator.
    public var text: OperatorText
    public var state: IncidentState
    /// Failures the incident absorbed, the first one included.
    public var failures: Int
    /// Jobs parked under it now.
    public var parked: Int
    /// Jobs parked under it now, by service.
    public var parkedByService: [String: Int]
    /// Jobs it has released so far.
    public var released: Int
    /// Jobs it set aside as dead letters (`invalid` incidents, and a job given up by an incident
    /// of its own).
    public var deadLettered: Int
    /// What its last step (a canary, a probe, a sign-in) found when it failed: why its cause
    /// still holds (`nil` before any step failed).
    public var lastCheck: String?
    /// How long it has been open (for a resolved incident: how long it was open), by the bus's
    /// clock.
    public var age: Duration
    /// When it opened, by the wall clock: recorded once, when the bus opened it, as the bus's
    /// clock tells it (the wall-clock time the bus was made, plus the time since on its clock).
    public var openedAt: Date
    /// When it ended, by the wall clock: recorded once, when the bus resolved it, as the bus's
    /// clock tells it.
    public var closedAt: Date?
    /// The policy's next step and how long until it, when one is scheduled.
    public var next: ScheduledStep?
    /// How it ended, once resolved.
    public var resolution: Resolution?

    /// A step the policy has scheduled.
    public struct ScheduledStep: Sendable, Equatable {
        public var step: PolicyStep
        /// Time left until the step (zero when it is under way or overdue).
        public var delay: Duration

        public init(step: PolicyStep, delay: Duration) {
            self.step = step
            self.delay = delay
        }
    }
}

/// Where an incident stands.
public struct IncidentState: RawRepresentable, Sendable, Hashable, Codable, CustomStringConvertible {
    public let rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }
    public var description: String { rawValue }

    /// Waiting for its next step (back-off, retry-after, probe interval).
    public static let waiting = IncidentState(rawValue: "waiting")
    /// A canary job is running.
    public static let canary = IncidentState(rawValue: "canary")
    /// A reachability probe is under way.
    public static let probing = IncidentState(rawValue: "probing")
    /// Signing in again.
    public static let reauthenticating = IncidentState(rawValue: "reauthenticating")
    /// Nothing automatic can help: an operator must act (e.g. credentials rejected).
    public static let needsOperator = IncidentState(rawValue: "needsOperator")
    /// The service is paused until it is resumed.
    public static let paused = IncidentState(rawValue: "paused")
    /// The cause is gone and parked jobs are being released.
    public static let releasing = IncidentState(rawValue: "releasing")
    /// Its scope serves some requests and refuses others (a rate, a quota, a full queue, a cold
    /// start, one bad backend): nothing is held back. New work and the jobs it refused go on at
    /// the pace the scope serves (``AdaptiveRate``, ``ConcurrencyLimit``), each refused job after
    /// a back-off of its own. Should the scope stop serving, the incident holds it again.
    public static let pacing = IncidentState(rawValue: "pacing")
    /// An `invalid` incident grouping same-cause dead letters.
    public static let collecting = IncidentState(rawValue: "collecting")
    /// Its cause went away and its jobs were released; it stays open for
    /// ``ErrorBusConfiguration/settleWindow``, holding nothing back, so that the same cause
    /// coming back is this incident again. Resolves ``Resolution/recovered``.
    public static let settling = IncidentState(rawValue: "settling")
    /// Over.
    public static let resolved = IncidentState(rawValue: "resolved")
    /// Being opened, inside the bus: holds nothing yet, and is never shown.
    static let opening = IncidentState(rawValue: "opening")

    /// Whether the incident holds back new work of its scope in this state.
    var holdsScope: Bool {
        self != .opening && self != .releasing && self != .pacing && self != .collecting && self != .settling && self != .resolved
    }

    /// Whether its parked jobs are being run again: released after its cause went away, or paced.
    var releases: Bool { self == .releasing || self == .pacing }
}

/// How an incident ended.
public struct Resolution: RawRepresentable, Sendable, Hashable, Codable, CustomStringConvertible {
    public let rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }
    public var description: String { rawValue }

    /// Its cause went away and every parked job was released.
    public static let recovered = Resolution(rawValue: "recovered")
    /// An operator discarded its parked jobs, or cancelled them until none was left to try.
    public static let discarded = Resolution(rawValue: "discarded")
    /// Its grouping window ended (`invalid`), or an operator closed it; or its jobs ended on
    /// their own (expired, replaced) before anything said its cause was gone.
    public static let closed = Resolution(rawValue: "closed")
    /// The bus stopped while it was open.
    public static let shutdown = Resolution(rawValue: "shutdown")
    /// The process that ran the bus ended while it was open without stopping the bus (a crash,
    /// `kill -9`, a power loss); closed by the next run.
    public static let interrupted = Resolution(rawValue: "interrupted")
    /// Its job failed on its own as many times as it may and was set aside as a dead letter
    /// (``ErrorBusConfiguration/Isolation/maxAttempts``).
    public static let givenUp = Resolution(rawValue: "givenUp")
}
