/// Where an outbox job stands.
///
/// A job moves `queued → inFlight → delivered`; a failed attempt sends it back to `queued`, an
/// outage parks it (`parked`) under an incident, a rejection sets it aside (`deadLettered`) until
/// an operator retries it (`queued`) or discards it (`discarded`). `delivered` and `discarded`
/// are final.
public enum JobState: String, Sendable, Hashable, Codable, CaseIterable, CustomStringConvertible {
    /// Waiting to be uploaded.
    case queued
    /// Being uploaded. Back to `queued` at start (``JobStore/requeueInterrupted()``).
    case inFlight
    /// Held back under an incident until its cause is gone. Back to `queued` at start.
    case parked
    /// The API has it.
    case delivered
    /// The API rejected it; it waits for an operator.
    case deadLettered
    /// An operator (or the reconciliation at start) gave it up.
    case discarded

    public var description: String { rawValue }

    /// Whether nothing more happens to a job in this state.
    public var isFinal: Bool { self == .delivered || self == .discarded }
}
