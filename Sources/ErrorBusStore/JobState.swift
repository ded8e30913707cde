/// Where an outbox job stands.
///
/// A job moves `queued → inFlight → delivered`; a failed attempt sends it back to `queued`, a
/// rejection sets it aside (`deadLettered`) until an operator retries it (`queued`) or discards
/// it (`discarded`). `delivered` and `discarded` are final.
///
/// A job the bus parks under an incident is `parked`, with the incident (``OutboxJob/incident``):
/// the row is where it waits, and the only record of it, so that a waiting upload costs no memory
/// however long the outage. The incident takes its parked jobs back one at a time
/// (``JobStore/takeParked(under:)``, to probe the cause) or all at once when it ends
/// (``JobStore/releaseParked(_:)``).
package enum JobState: String, Sendable, Hashable, Codable, CaseIterable, CustomStringConvertible {
    /// Waiting to be uploaded.
    case queued
    /// An upload is running. Back to `queued` when errorbusd stops or starts
    /// (``JobStore/requeueInterrupted()``).
    case inFlight
    /// Waiting on an incident of the bus until it releases it (``OutboxJob/incident``). Those of
    /// a run that ended are queued again once the next run's sync starts: the bus's incidents end
    /// with errorbusd, and the first uploads of the next run open them again if their cause is
    /// still there.
    case parked
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
