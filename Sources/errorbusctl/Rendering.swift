import ErrorBusControl
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// The human forms of the daemon's replies.
extension Output {
    func tone(_ state: Control.ServiceState) -> Tone {
        switch state {
        case .running: .good
        case .held, .paced: .warning
        case .needsOperator, .paused, .stopped: .bad
        }
    }

    func tone(incidentState state: String) -> Tone? {
        switch state {
        case "needsOperator", "paused": .bad
        case "resolved": .dim
        case "releasing": .good
        default: .warning
        }
    }

    /// "probe in 8s", "needs an operator", "-".
    func nextStep(_ incident: Control.Incident) -> String {
        if incident.state == "needsOperator" { return "needs an operator" }
        guard let action = incident.nextAction else { return "-" }
        return "\(action) \(relative(incident.nextActionAt))"
    }

    func status(_ status: Control.Status) -> String {
        var lines: [String] = []
        let bus = status.running ? paint("running", .good) : paint("not running", .bad)
        lines.append("errorbusd \(status.version), started \(relative(status.startedAt)), bus \(bus)")
        lines.append("Status: \(status.statusLine)")
        lines.append("Health: \(paint(status.health.status.rawValue.uppercased(), tone(status.health.status))) - \(status.health.summary)")
        lines.append("Backlog: \(backlog(status.backlog))")
        if let bandwidth = status.bandwidth, bandwidth.setting != "off" {
            let rate = bandwidth.bytesPerSecond.map { Self.bytes($0) + "/s" } ?? "no limit"
            let until = bandwidth.until.map { ", until \(relative($0))" } ?? ""
            lines.append("Bandwidth: \(rate) now\(until) (sync.bandwidth \(bandwidth.setting))")
        }
        if !status.classify.isEmpty {
            lines.append("api.classify: \(status.classify.joined(separator: ", "))")
        }
        lines.append("")
        lines.append(table(
            ["SERVICE", "STATE", "QUEUED", "IN FLIGHT", "PARKED", "DEAD", "LAST ERROR"],
            status.services.map { service in
                [
                    Cell(service.name),
                    Cell(service.state.rawValue, tone(service.state)),
                    Cell("\(service.queued)"),
                    Cell("\(service.inFlight)"),
                    Cell("\(service.parked)", service.parked > 0 ? .warning : nil),
                    Cell("\(service.dead)", service.dead > 0 ? .bad : nil),
                    Cell(service.lastError.map { "#\($0.incident) \($0.title) (\(relative($0.at)))" } ?? "-"),
                ]
            },
            rightAligned: [2, 3, 4, 5]
        ))
        lines.append("")
        if status.incidents.isEmpty {
            lines.append("No open incident.")
        } else {
            lines.append(incidents(status.incidents))
        }
        if !status.unreadableFiles.isEmpty {
            lines.append("")
            lines.append(paint("\(status.unreadableFiles.count) outbox file(s) errorbusd cannot read or will not send, not uploaded (unreadable ones: give group errorbus read access):", .bad))
            lines.append(table(
                ["FILE", "SINCE", "WHY"],
                status.unreadableFiles.prefix(20).map { [Cell($0.file), Cell(relative($0.since)), Cell($0.reason)] }
            ))
            if status.unreadableFiles.count > 20 { lines.append("… and \(status.unreadableFiles.count - 20) more") }
        }
        return lines.joined(separator: "\n")
    }

    func tone(_ health: Control.HealthStatus) -> Tone {
        switch health {
        case .ok: .good
        case .warning: .warning
        case .critical: .bad
        }
    }

    /// "1,204 files (12.0 MiB), oldest queued 3m ago; at most 1.0 GiB (reject-new): 12 files wait in the outbox".
    func backlog(_ backlog: Control.Backlog) -> String {
        var text = "\(backlog.files) file\(backlog.files == 1 ? "" : "s") (\(Self.bytes(backlog.bytes)))"
        if let oldest = backlog.oldestQueuedAt { text += ", oldest queued \(relative(oldest))" }
        let limits = [backlog.maxFiles.map { "\($0) files" }, backlog.maxBytes.map { Self.bytes($0) }].compactMap { $0 }
        if !limits.isEmpty { text += "; at most \(limits.joined(separator: " and ")) (\(backlog.overflow))" }
        if backlog.rejectedFiles > 0 { text += paint("; \(backlog.rejectedFiles) new files wait in the outbox for room", .warning) }
        if let unqueued = backlog.unqueuedFiles, unqueued > 0 {
            let what = unqueued == 1 ? "1 file" : "\(unqueued) files"
            text += paint("; \(what) could not be queued: \(backlog.unqueuedReason ?? "the store refused them")", .bad)
        }
        return text
    }

    /// `512 B`, `12.0 KiB`, `3.4 GiB`.
    static func bytes(_ count: Int) -> String {
        let units = ["B", "KiB", "MiB", "GiB", "TiB"]
        var value = Double(count)
        var unit = 0
        while value >= 1024, unit < units.count - 1 {
            value /= 1024
            unit += 1
        }
        let tenths = Int((value * 10).rounded())
        return unit == 0 ? "\(count) B" : "\(tenths / 10).\(tenths % 10) \(units[unit])"
    }

    func incidents(_ incidents: [Control.Incident]) -> String {
        table(
            ["ID", "SERVICE", "CATEGORY", "SCOPE", "STATE", "FAILURES", "PARKED", "OPENED", "NEXT", "TITLE"],
            incidents.map { incident in
                [
                    Cell("\(incident.id)"),
                    Cell(incident.service),
                    Cell(incident.category.rawValue),
                    Cell(incident.scope),
                    Cell(incident.resolution ?? incident.state, tone(incidentState: incident.isOpen ? incident.state : "resolved")),
                    Cell("\(incident.failures)"),
                    Cell("\(incident.parked)"),
                    Cell(relative(incident.openedAt)),
                    Cell(incident.isOpen ? nextStep(incident) : "closed \(relative(incident.closedAt))"),
                    Cell(incident.title),
                ]
            },
            rightAligned: [0, 5, 6]
        )
    }

    func incident(_ detail: Control.IncidentDetail) -> String {
        let incident = detail.incident
        var rows: [(String, String)] = [
            ("Incident", "\(incident.id)"),
            ("Title", incident.title),
            ("Message", incident.message),
        ]
        if let next = incident.next { rows.append(("Next", next)) }
        rows += [
            ("Service", incident.service),
            ("Category", incident.category.rawValue),
            ("Scope", incident.scope),
            ("Cause", incident.cause),
            ("State", paint(incident.state, tone(incidentState: incident.state))),
            ("Opened", "\(incident.openedAt) (\(relative(incident.openedAt)))"),
        ]
        if incident.isOpen {
            rows.append(("Next step", nextStep(incident)))
            if let check = incident.lastCheck { rows.append(("Last check", check)) }
        } else {
            rows.append(("Resolution", incident.resolution ?? "-"))
            rows.append(("Closed", incident.closedAt.map { "\($0) (\(relative($0)))" } ?? "-"))
        }
        rows += [
            ("Failures", "\(incident.failures)"),
            ("Parked", "\(incident.parked)"),
            ("Released", "\(incident.released)"),
            ("Dead-lettered", "\(incident.deadLettered)"),
        ]
        let width = rows.map(\.0.count).max() ?? 0
        var lines = rows.map { label, value in
            paint(label + ":", .bold) + String(repeating: " ", count: width - label.count + 1) + value
        }
        if !detail.parked.isEmpty {
            lines.append("")
            lines.append(paint("Parked jobs:", .bold))
            // Another service's jobs parked here too (an outage of their server) are told so.
            let otherServices = detail.parked.contains { $0.service != incident.service }
            let rows = detail.parked.map { job in
                [Cell(Self.shortID(job.id)), Cell(job.name ?? "-")] + (otherServices ? [Cell(job.service)] : [])
            }
            let table = table(["ID", "NAME"] + (otherServices ? ["SERVICE"] : []), rows)
            lines += table.split(separator: "\n", omittingEmptySubsequences: false).map { "  " + $0 }
            if incident.parked > detail.parked.count {
                lines.append("  … and \(incident.parked - detail.parked.count) more")
            }
        }
        return lines.joined(separator: "\n")
    }

    func jobs(_ list: Control.JobList, shown offset: Int) -> String {
        guard !list.jobs.isEmpty else { return list.total == 0 ? "No job." : "No job on this page (\(list.total) in all)." }
        var text = table(
            ["ID", "SERVICE", "FILE", "SIZE", "STATE", "ATTEMPTS", "INCIDENT", "UPDATED", "ERROR"],
            list.jobs.map { job in
                [
                    Cell(Self.shortID(job.id)),
                    Cell(job.service),
                    Cell(job.file),
                    Cell("\(job.size)"),
                    Cell(job.state.rawValue, job.state == .deadLettered ? .bad : job.state == .parked ? .warning : nil),
                    Cell("\(job.attempts)"),
                    Cell(job.incident.map { "\($0)" } ?? "-"),
                    Cell(relative(job.updatedAt)),
                    Cell(job.reason ?? job.lastError ?? "-"),
                ]
            },
            rightAligned: [3, 5, 6]
        )
        if list.jobs.count < list.total {
            text += "\n\(paint("jobs \(offset + 1)–\(offset + list.jobs.count) of \(list.total)", .dim))"
        }
        return text
    }

    /// A job's id as tables show it: an outbox file's SHA-256 by its first 12 hex digits (which
    /// retry, discard and cancel take), another id (a resource's) whole.
    static func shortID(_ id: String) -> String {
        id.count > 12 && id.allSatisfy(\.isHexDigit) ? String(id.prefix(12)) : id
    }

    func event(_ event: Control.Event) -> String {
        let time = String(event.at.dropFirst(11).prefix(8))
        var parts = [paint(time, .dim), paint(event.kind, .bold)]
        if let incident = event.incident {
            parts.append("incident \(incident.id) (\(incident.service), \(incident.category.rawValue) \(incident.scope)): \(incident.title)")
            if incident.isOpen, incident.nextAction != nil { parts.append("— \(nextStep(incident))") }
        }
        if let job = event.job { parts.append("job \(job)") }
        if let reason = event.reason { parts.append("— \(reason)") }
        return parts.joined(separator: " ")
    }
}
