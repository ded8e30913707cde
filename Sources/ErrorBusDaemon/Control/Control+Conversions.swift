import ErrorBus
public import ErrorBusControl
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
    /// An incident as the bus holds it now.
    init(_ incident: IncidentSnapshot, now: Date) {
        self.init(
            id: Int(incident.id.rawValue),
            service: incident.service,
            category: Control.Category(incident.category.kind),
            scope: incident.fingerprint.scope,
            cause: incident.fingerprint.cause,
            state: incident.state.rawValue,
            title: incident.text.title,
            message: incident.text.message,
            next: incident.text.next,
            failures: incident.failures,
            parked: incident.parked,
            released: incident.released,
            deadLettered: incident.deadLettered,
            // A resolved snapshot's age is how long it was open; its times come from the store.
            openedAt: ControlTime.format(now, plus: .zero - incident.age),
            nextAction: incident.next?.step.rawValue,
            nextActionAt: incident.next.map { ControlTime.format(now, plus: $0.delay) },
            resolution: incident.resolution?.rawValue,
            closedAt: incident.resolution.map { _ in ControlTime.format(now) }
        )
    }

    /// An incident from the store's history.
    init(_ incident: StoredIncident) {
        self.init(
            id: Int(incident.id),
            service: incident.service,
            category: ErrorCategory.Kind(rawValue: incident.category).map(Control.Category.init) ?? .fatal,
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
            openedAt: ControlTime.format(incident.openedAt),
            nextAction: nil,
            nextActionAt: nil,
            resolution: incident.resolution?.rawValue,
            closedAt: incident.closedAt.map(ControlTime.format)
        )
    }
}

extension Control.Category {
    init(_ kind: ErrorCategory.Kind) {
        switch kind {
        case .unreachable: self = .unreachable
        case .rateLimited: self = .rateLimited
        case .transient: self = .transient
        case .unauthenticated: self = .unauthenticated
        case .invalid: self = .invalid
        case .fatal: self = .fatal
        }
    }
}

extension Control.JobState {
    init(_ state: JobState) {
        switch state {
        case .queued: self = .queued
        case .inFlight: self = .inFlight
        case .parked: self = .parked
        case .delivered: self = .delivered
        case .deadLettered: self = .deadLettered
        case .discarded: self = .discarded
        }
    }
}

extension JobState {
    init(_ state: Control.JobState) {
        switch state {
        case .queued: self = .queued
        case .inFlight: self = .inFlight
        case .parked: self = .parked
        case .delivered: self = .delivered
        case .deadLettered: self = .deadLettered
        case .discarded: self = .discarded
        }
    }
}

extension Control.Job {
    init(_ job: OutboxJob) {
        self.init(
            id: job.id,
            service: job.service,
            file: job.fileName,
            size: Int(job.size),
            state: Control.JobState(job.state),
            attempts: job.attempts,
            lastError: job.lastError,
            incident: job.incident.map { Int($0) },
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
    public init(_ error: ConfigurationError) {
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
