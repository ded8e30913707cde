/// The installed fault rules: the one source of truth the connection handler and the router both
/// consult (through ``SandboxState/faults``).
///
/// A plain value: no clock, no lock. Callers pass the time and hold the lock. When several rules
/// are in force for a route, the most recently added one wins; rules whose window has passed are
/// dropped the next time the board is read.
struct FaultBoard: Sendable {
    private(set) var rules: [FaultRule] = []
    private var nextID = 1

    /// Adds a rule received at `now`; returns it.
    mutating func add(spec: FaultSpec, route: SandboxRoute?, mode: FaultMode, schedule: FaultSchedule, now: Duration) -> FaultRule {
        let rule = FaultRule(id: nextID, spec: spec, route: route, mode: mode, schedule: schedule, receivedAt: now)
        nextID += 1
        rules.append(rule)
        return rule
    }

    /// The mode in force for `route` at `now`, if any. A rule for a share of requests applies to
    /// this one or not, drawn at random; when not, the next newest rule is asked.
    mutating func activeMode(for route: SandboxRoute, at now: Duration) -> FaultMode? {
        guard !rules.isEmpty else { return nil }
        prune(at: now)
        var random = SystemRandomNumberGenerator()
        for rule in rules.reversed() where rule.matches(route) && rule.isActive(at: now) && rule.applies(using: &random) {
            return rule.mode
        }
        return nil
    }

    /// Whether a request to `route` arriving at `now` must be answered with a connection reset:
    /// `nil` if not, else after how many bytes of its body (`nil` inside: once it is read).
    mutating func reset(_ route: SandboxRoute, at now: Duration) -> Int?? {
        guard case .down(let afterBytes) = activeMode(for: route, at: now) else { return nil }
        return .some(afterBytes)
    }

    /// The rules that can still apply at or after `now`.
    mutating func current(at now: Duration) -> [FaultRule] {
        prune(at: now)
        return rules
    }

    /// Removes the rule with `id`; returns whether there was one.
    mutating func remove(id: Int) -> Bool {
        guard let index = rules.firstIndex(where: { $0.id == id }) else { return false }
        rules.remove(at: index)
        return true
    }

    /// Removes every rule set on `route` (nil: the rules set on `all`); returns how many.
    mutating func removeAll(route: SandboxRoute?) -> Int {
        let before = rules.count
        rules.removeAll { $0.route == route }
        return before - rules.count
    }

    /// Removes every rule; returns how many.
    mutating func removeAll() -> Int {
        defer { rules.removeAll() }
        return rules.count
    }

    private mutating func prune(at now: Duration) {
        if rules.contains(where: { $0.isOver(at: now) }) {
            rules.removeAll { $0.isOver(at: now) }
        }
    }
}
