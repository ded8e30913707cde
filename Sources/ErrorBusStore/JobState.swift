/// Where an outbox job stands.
///
/// A job moves `queued → inFlight → delivered`; a failed attempt sends it back to `queued`, a
/// rejection sets it aside (`deadLettered`) until an operator retries it (`queued`) or discards
/// it (`discarded`). `delivered` and `discarded` are final.
///
/// A job the bus parks under an incident stays `inFlight` here: the bus is the one owner of
/// where it waits (``ErrorBus/ErrorBus/heldJobs(service:)``), and the store records only its
/// outcome.
package enum JobState: String, Sendable, Hashable, Codable, CaseIterable, CustomStringConvertible {
    /// Waiting to be uploaded.
    case queued
    /// Handed to the bus: being uploaded, or held by the bus until its incident's cause is gone.
    /// Back to `queued` when errorbusd stops or starts (``JobStore/requeueInterrupted()``).
    case inFlight
    /// The API has it.
    case delivered
    /// The API rejected it; it waits for an operator.
    case deadLettered
    /// An operator (or the reconciliation at start) gave it up.
    case discarded

    package var description: String { rawValue }

    /// Whether nothing more happens to a job in this state.
    package var isFinal: Bool { self == .delivered || self == .discarded }
}
