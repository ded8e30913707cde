/// A step an incident's policy takes to find out whether its cause is gone.
public enum PolicyStep: String, Sendable, Hashable, CustomStringConvertible {
    /// Run one parked job as a trial: its success releases the others.
    case canary
    /// Ask the reachability probe whether the scope answers again.
    case probe
    /// Sign in again through the authenticator.
    case reauthenticate
    /// Close the incident: its grouping window is over.
    case close

    public var description: String { rawValue }
}

/// What the bus must do next for an incident, as decided by its policy.
package enum PolicyAction<Instant: InstantProtocol>: Equatable where Instant.Duration == Duration {
    /// Nothing until `instant`, then take `step`.
    case wait(until: Instant, then: PolicyStep)
    /// Take `step` now.
    case now(PolicyStep)
    /// The cause is gone: release every parked job, paced.
    case release
    /// Only an operator can move this incident on; keep everything parked.
    case needsOperator(reason: String)
    /// Keep everything parked until an operator resumes (a paused service).
    case hold
}

/// How a policy step ended.
package enum StepResult: Equatable {
    case succeeded
    /// The step met the incident's cause again; `retryAfter` is the server's new hint, if any.
    case failed(reason: String, retryAfter: Duration?)
    /// The credentials were refused: no automatic step can help.
    case rejected(reason: String)
}
