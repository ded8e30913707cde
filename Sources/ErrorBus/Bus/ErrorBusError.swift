/// Why an operator action on the bus was refused.
public struct ErrorBusError: Error, Sendable, Hashable, CustomStringConvertible {
    private enum Code: Hashable {
        case noSuchIncident(IncidentID)
        case noSuchJob(service: String, id: String)
    }

    private let code: Code

    private init(_ code: Code) { self.code = code }

    /// No open incident has this id.
    public static func noSuchIncident(_ id: IncidentID) -> ErrorBusError { ErrorBusError(.noSuchIncident(id)) }
    /// No parked job of this service has this id.
    public static func noSuchJob(service: String, id: String) -> ErrorBusError { ErrorBusError(.noSuchJob(service: service, id: id)) }

    /// Whether the error is about a missing incident.
    public var isNoSuchIncident: Bool {
        if case .noSuchIncident = code { true } else { false }
    }

    /// Whether the error is about a missing job.
    public var isNoSuchJob: Bool {
        if case .noSuchJob = code { true } else { false }
    }

    public var description: String {
        switch code {
        case .noSuchIncident(let id): "no open incident \(id)"
        case .noSuchJob(let service, let id): "no parked job \(service)/\(id)"
        }
    }
}
