/// How the admin API shows an installed fault, or the result of a one-shot action.
struct FaultReport: Codable, Sendable, Equatable {
    /// The rule's id (absent for actions).
    var id: Int?
    /// The fault as it was posted.
    var spec: FaultSpec
    /// When the rule starts, in sandbox milliseconds.
    var startsAtMs: Double?
    /// When it stops for good, in sandbox milliseconds; absent: until cleared.
    var endsAtMs: Double?
    /// Whether it is in force right now (for a flapping rule: in an `on` phase).
    var active: Bool?
    /// `expireTokens`: how many tokens were still valid and are not any more.
    var expiredTokens: Int?

    init(rule: FaultRule, now: Duration) {
        id = rule.id
        spec = rule.spec
        startsAtMs = rule.start.milliseconds
        endsAtMs = rule.end?.milliseconds
        active = rule.isActive(at: now)
    }

    init(spec: FaultSpec, expiredTokens: Int) {
        self.spec = spec
        self.expiredTokens = expiredTokens
    }
}
