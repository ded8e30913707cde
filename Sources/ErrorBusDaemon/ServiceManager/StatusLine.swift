import ErrorBusUnits
import ErrorBus
import ErrorBusControl
import ErrorBusSupport
#if canImport(Glibc)
import Glibc
#endif

/// errorbusd's one-line state for `systemctl status` (`STATUS=`): the health verdict, then what
/// is held back and why, e.g. `WARNING: 1,212 parked (warning from 1000); sync: 1212 parked,
/// 10.0.0.5 unreachable since 10:42, next probe in 8s`.
enum StatusLine {
    /// - Parameter parked: The bus's state, with the jobs parked under each incident.
    static func render(_ parked: ParkedJobs, health: Control.Health) -> String {
        render(health, then: render(parked))
    }

    /// The verdict, what is wrong, then `incidents`.
    static func render(_ health: Control.Health, then incidents: String) -> String {
        guard health.status != .ok else { return "OK: \(incidents)" }
        return "\(health.status.rawValue.uppercased()): \(health.summary); \(incidents)"
    }

    /// One clause per kind of trouble: incidents whose clauses are the same (files each set
    /// aside on its own at one scope, say) are told once, counted: `20 incidents, each: sync: 1
    /// parked, …`, in the order of the first of them.
    static func render(_ parked: ParkedJobs) -> String {
        let snapshot = parked.snapshot
        // Sent from the moment the services run; the bus's own loop may start a moment later.
        guard !snapshot.incidents.isEmpty else { return "running, no open incident" }
        var clauses: [(text: String, count: Int)] = []
        var index: [String: Int] = [:]
        for incident in snapshot.incidents {
            let text = render(incident, parked: parked.under(incident))
            if let at = index[text] {
                clauses[at].count += 1
            } else {
                index[text] = clauses.count
                clauses.append((text, 1))
            }
        }
        return clauses.map { $0.count == 1 ? $0.text : "\($0.count) incidents, each: \($0.text)" }.joined(separator: "; ")
    }

    /// - Parameter parked: The jobs parked under it (``ParkedJobs``); those the bus keeps if not
    ///   given.
    static func render(_ incident: IncidentSnapshot, parked: Int? = nil) -> String {
        var parts = ["\(incident.service): \(parked ?? incident.parked) parked"]
        parts.append("\(incident.fingerprint.scope) \(condition(incident.category.kind)) since \(clockTime(ago: incident.age))")
        if incident.state == .needsOperator {
            parts.append("needs an operator")
        } else if incident.state == .pacing {
            parts.append("paced: it serves others")
        } else if let next = incident.next {
            parts.append("\(phrase(next.step)) in \(DurationText.format(next.delay))")
        }
        return parts.joined(separator: ", ")
    }

    static func condition(_ kind: ErrorCategory.Kind) -> String {
        switch kind {
        case .unreachable: "unreachable"
        case .transient: "failing"
        case .rateLimited: "rate-limiting"
        case .unauthenticated: "refusing credentials"
        case .invalid: "rejecting jobs"
        case .fatal: "paused"
        }
    }

    static func phrase(_ step: PolicyStep) -> String {
        switch step {
        case .canary: "next attempt"
        case .probe: "next probe"
        case .reauthenticate: "re-authenticating"
        case .close: "closing"
        }
    }

    /// The local wall-clock time `age` ago, as `HH:MM`.
    static func clockTime(ago age: Duration) -> String {
        var now = time_t()
        time(&now)
        var then = now - time_t(age.components.seconds)
        var parts = tm()
        localtime_r(&then, &parts)
        let hour = parts.tm_hour < 10 ? "0\(parts.tm_hour)" : "\(parts.tm_hour)"
        let minute = parts.tm_min < 10 ? "0\(parts.tm_min)" : "\(parts.tm_min)"
        return "\(hour):\(minute)"
    }
}
