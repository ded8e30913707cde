import Synchronization

/// A live feed of the bus's events, starting with the state at the moment of subscribing.
///
/// Each subscription buffers at most ``ErrorBusConfiguration/eventBufferSize`` events. A
/// subscriber that falls further behind loses the oldest ones, counted in ``droppedEvents``; it
/// never slows the bus down. Iterate it from one task; stop iterating (or drop it) to unsubscribe.
public struct EventSubscription: AsyncSequence, Sendable {
    // `Element` and the sequence's `Failure` (`Never`) are inferred from the iterator: a
    // `typealias Failure` here would shadow the bus's own `Failure` inside this type.

    /// The bus's state when the subscription began: replay it before the events.
    public let initialSnapshot: BusSnapshot

    let stream: AsyncStream<BusEvent>
    let drops: DropCounter

    /// How many events this subscriber lost by falling behind.
    public var droppedEvents: Int { drops.value }

    public func makeAsyncIterator() -> AsyncStream<BusEvent>.Iterator {
        stream.makeAsyncIterator()
    }
}

/// Counts the events one subscriber lost. Shared between the bus and the subscription.
final class DropCounter: Sendable {
    private let count = Atomic<Int>(0)

    var value: Int { count.load(ordering: .relaxed) }

    func increment() {
        count.add(1, ordering: .relaxed)
    }
}

/// The bus's subscribers. Lives inside the bus actor.
struct EventBroadcaster {
    private struct Subscriber {
        let continuation: AsyncStream<BusEvent>.Continuation
        let drops: DropCounter
    }

    private var subscribers: [Subscriber] = []
    /// Whether the bus stopped: a subscription made later ends at once.
    private var finished = false

    var isEmpty: Bool { subscribers.isEmpty }

    mutating func subscribe(bufferSize: Int, snapshot: BusSnapshot) -> EventSubscription {
        let (stream, continuation) = AsyncStream.makeStream(
            of: BusEvent.self,
            bufferingPolicy: .bufferingNewest(max(1, bufferSize))
        )
        let drops = DropCounter()
        if finished {
            continuation.finish()
        } else {
            subscribers.append(Subscriber(continuation: continuation, drops: drops))
        }
        return EventSubscription(initialSnapshot: snapshot, stream: stream, drops: drops)
    }

    /// Hands the event to every subscriber without waiting for any of them.
    mutating func emit(_ event: BusEvent) {
        subscribers.removeAll { subscriber in
            switch subscriber.continuation.yield(event) {
            case .enqueued: return false
            case .dropped: subscriber.drops.increment(); return false
            case .terminated: return true
            @unknown default: return false
            }
        }
    }

    /// Ends every subscription.
    mutating func finish() {
        finished = true
        for subscriber in subscribers { subscriber.continuation.finish() }
        subscribers.removeAll()
    }
}
