import ErrorBus
package import ErrorBusControl
import ErrorBusStore
import ErrorBusSupport
import Foundation

/// ISO 8601 in UTC, to the millisecond, as every time of `io.errorbus.Control` is written: a
/// next step due in 600 ms must not read as due already.
enum ControlTime {
    static func format(_ date: Date) -> String {
        date.formatted(Date.ISO8601FormatStyle(includingFractionalSeconds: true))
    }

    /// `duration` from `date`, forward (a positive duration) or back.
    static func format(_ date: Date, plus duration: Duration) -> String {
        format(date.addingTimeInterval(duration.timeInterval))
    }
}

extension Control.Incident {
    /// An incident as the bus holds it now, with its next step.
    init(_ incident: IncidentSnapshot, now: Date) {
        self.init(StoredIncident(incident, updatedAt: now), next: incident.next, lastCheck: incident.lastCheck, now: now)
    }

    /// An incident from the store's history, or (with `next` and `lastCheck`) as the bus holds it.
    init(_ incident: StoredIncident, next: IncidentSnapshot.ScheduledStep? = nil, lastCheck: String? = nil, now: Date = Date()) {
        self.init(
            id: Int(incident.id),
            service: incident.service,
            category: Control.Category(rawValue: incident.category) ?? .fatal,
            scope: incident.scope,
            cause: incident.cause,
            state: incident.state.rawValue,
            title: incident.title,
            message: incident.message,
            next: incident.next,
            failures: incident.failures,
            parked: incident.parked,
            released: incident.released,
            deadLettered: incident.deadLettered,
            lastCheck: lastCheck,
            openedAt: ControlTime.format(incident.openedAt),
            nextAction: next?.step.rawValue,
            nextActionAt: next.map { ControlTime.format(now, plus: $0.delay) },
            resolution: incident.resolution?.rawValue,
            closedAt: incident.closedAt.map(ControlTime.format)
        )
    }
}

extension Control.Category {
    /// The wire's name for a category: the same raw value.
    init(_ kind: ErrorCategory.Kind) {
        self.init(rawValue: kind.rawValue)!
    }
}

extension Control.JobState {
    /// The wire's name for a stored state: the same raw value.
    init(_ state: JobState) {
        self.init(rawValue: state.rawValue)!
    }
}

extension Control.Job {
    /// A stored job, where it waits: the store is the one place that keeps it.
    init(_ job: OutboxJob) {
        self.init(job, state: Control.JobState(job.state), incident: job.incident)
    }

    private init(_ job: OutboxJob, state: Control.JobState, incident: UInt64?) {
        self.init(
            id: job.id,
            service: job.service,
            file: job.fileName,
            size: Int(job.size),
            state: state,
            attempts: job.attempts,
            lastError: job.lastError,
            incident: incident.map { Int($0) },
            reason: job.reason,
            createdAt: ControlTime.format(job.createdAt),
            updatedAt: ControlTime.format(job.updatedAt)
        )
    }
}

extension Control.Event {
    /// A bus event.
    init(_ event: BusEvent, now: Date) {
        self.init(
            kind: event.kind.rawValue,
            at: ControlTime.format(now),
            incident: event.incident.map { Control.Incident($0, now: now) },
            job: event.job.map { "\($0.service)/\($0.id)" },
            reason: event.reason
        )
    }
}

extension Control.ConfigurationProblem {
    /// A configuration errorbusd cannot run with, as the control interface tells it.
    package init(_ error: ConfigurationError) {
        self.init(
            file: error.file,
            line: error.line,
            key: error.key,
            environmentVariable: error.environmentVariable,
            reason: error.reason,
            text: error.description
        )
    }
}
