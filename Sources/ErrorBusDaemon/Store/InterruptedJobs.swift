/// The jobs ``JobStore/requeueInterrupted()`` queued again.
public struct InterruptedJobs: Sendable, Equatable {
    /// Uploads that were under way.
    public var inFlight = 0
    /// Jobs an incident held.
    public var parked = 0

    public init(inFlight: Int = 0, parked: Int = 0) {
        self.inFlight = inFlight
        self.parked = parked
    }

    /// Both.
    public var total: Int { inFlight + parked }
}
