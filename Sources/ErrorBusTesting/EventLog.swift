public import ErrorBus

/// A bus's events as a test reads them: wait for the next event of a kind, keep everything seen.
///
/// Wait for the event that says the bus did what the test needs before moving the clock, e.g.
/// ``BusEvent/Kind/policyScheduled`` (then advance by the incident's
/// ``IncidentSnapshot/next`` delay), not ``BusEvent/Kind/probeFailed``, which the bus emits before
/// it schedules the next probe.
public final class EventLog {
    private var iterator: EventSubscription.AsyncIterator
    /// Every event read so far, in order.
    public private(set) var seen: [BusEvent] = []
    private let subscription: EventSubscription

    /// The event stream ended (the bus stopped) before an event of the kind awaited came.
    public struct StreamEnded: Error, CustomStringConvertible {
        /// The kind awaited.
        public let awaited: BusEvent.Kind
        public var description: String { "the bus's event stream ended before \(awaited)" }
    }

    /// Reads `subscription`, which should be made before the test does anything on the bus
    /// (`await bus.subscribe(bufferSize: …)` with a buffer larger than the test's events).
    public init(_ subscription: EventSubscription) {
        self.subscription = subscription
        self.iterator = subscription.makeAsyncIterator()
    }

    /// Waits for the next event of `kind`, skipping others (they stay in ``seen``).
    @discardableResult
    public func next(_ kind: BusEvent.Kind, isolation: isolated (any Actor)? = #isolation) async throws(StreamEnded) -> BusEvent {
        while let event = await iterator.next(isolation: isolation) {
            seen.append(event)
            if event.kind == kind { return event }
        }
        throw StreamEnded(awaited: kind)
    }

    /// The bus as it stood when the log subscribed.
    public var initialSnapshot: BusSnapshot { subscription.initialSnapshot }

    /// Events the bus dropped because the log fell behind its buffer.
    public var droppedEvents: Int { subscription.droppedEvents }

    /// How many events of `kind` were read so far.
    public func count(of kind: BusEvent.Kind) -> Int {
        seen.count { $0.kind == kind }
    }
}
