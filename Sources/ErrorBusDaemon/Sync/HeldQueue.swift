import ErrorBus

/// A service's queued jobs that an incident holds back: they wait in the store, behind it, as
/// the jobs parked under it wait in the bus. To an operator they are parked too.
struct HeldQueue: Sendable, Equatable {
    var service: String
    /// The oldest open incident holding them; `nil` when the bus's stop holds them.
    var incident: IncidentID?
    var jobs: Int
}
