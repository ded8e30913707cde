/// One installed fault: a mode on a route (or all routes) during a window of sandbox time.
///
/// Times are offsets on the sandbox's clock (see ``SandboxClock``), so the rule is evaluated
/// exactly at each request's arrival and no timer has to clear it.
struct FaultRule: Sendable, Equatable {
    /// Stable id, for `DELETE /admin/faults/{id}`.
    let id: Int
    /// The spec as received, shown back by the admin API.
    let spec: FaultSpec
    /// The route it applies to; nil: every faultable route.
    let route: SandboxRoute?
    let mode: FaultMode
    /// When it starts.
    let start: Duration
    /// When it stops applying for good; nil: until cleared.
    let end: Duration?
    /// Faulty for `on`, healthy for `off`, repeating from `start`.
    let flap: (on: Duration, off: Duration)?
    /// The share of requests it applies to; nil: all.
    let share: Double?

    init(id: Int, spec: FaultSpec, route: SandboxRoute?, mode: FaultMode, schedule: FaultSchedule, receivedAt now: Duration) {
        self.id = id
        self.spec = spec
        self.route = route
        self.mode = mode
        self.start = now + schedule.after
        self.end = schedule.length.map { now + schedule.after + $0 }
        self.flap = schedule.flap
        self.share = schedule.share
    }

    /// Whether it applies to one request, drawn at random when it applies to a share of them.
    func applies(using random: inout some RandomNumberGenerator) -> Bool {
        guard let share else { return true }
        return Double.random(in: 0..<1, using: &random) < share
    }

    /// Whether it applies to `route`.
    func matches(_ route: SandboxRoute) -> Bool {
        self.route.map { $0 == route } ?? route.isFaultable
    }

    /// Whether it is in force at `now`.
    func isActive(at now: Duration) -> Bool {
        guard now >= start else { return false }
        if let end, now >= end { return false }
        guard let flap else { return true }
        let cycle = (flap.on + flap.off).nanoseconds
        let phase = (now - start).nanoseconds % cycle
        return phase < flap.on.nanoseconds
    }

    /// Whether it will never be in force again after `now`.
    func isOver(at now: Duration) -> Bool {
        end.map { now >= $0 } ?? false
    }

    static func == (lhs: FaultRule, rhs: FaultRule) -> Bool {
        lhs.id == rhs.id && lhs.spec == rhs.spec && lhs.start == rhs.start && lhs.end == rhs.end
    }
}
