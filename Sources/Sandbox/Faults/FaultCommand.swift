/// What a valid ``FaultSpec`` asks the sandbox to do.
enum FaultCommand: Sendable, Equatable {
    /// Install a rule: `mode` on `route` (nil: every faultable route) during `schedule`.
    case rule(route: SandboxRoute?, mode: FaultMode, schedule: FaultSchedule)
    /// One-shot: every issued token becomes invalid.
    case expireTokens
}
