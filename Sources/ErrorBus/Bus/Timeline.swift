/// A point on a ``Timeline``: the time since the timeline was made, on its clock.
///
/// State that keeps deadlines as these (the bus's incidents, the network monitor's debouncer)
/// is one concrete type whatever clock was injected; only reading the time and sleeping go
/// through that clock.
package struct TimelineInstant: InstantProtocol, CustomStringConvertible {
    package typealias Duration = Swift.Duration

    package let offset: Duration

    package init(offset: Duration) {
        self.offset = offset
    }

    package func advanced(by duration: Duration) -> TimelineInstant {
        TimelineInstant(offset: offset + duration)
    }

    package func duration(to other: TimelineInstant) -> Duration {
        other.offset - offset
    }

    package static func < (lhs: TimelineInstant, rhs: TimelineInstant) -> Bool {
        lhs.offset < rhs.offset
    }

    package var description: String { "t+\(offset)" }
}

/// An injected clock of any type, seen as a timeline of ``TimelineInstant``s from the moment it
/// was wrapped: what the bus and the daemon's services read and sleep on, so that tests hand
/// them a manual clock.
package struct Timeline: Sendable {
    package let now: @Sendable () -> TimelineInstant
    package let sleep: @Sendable (TimelineInstant) async throws -> Void

    package init<C: Clock>(_ clock: C) where C.Duration == Duration {
        let origin = clock.now
        now = { TimelineInstant(offset: origin.duration(to: clock.now)) }
        sleep = { deadline in try await clock.sleep(until: origin.advanced(by: deadline.offset), tolerance: nil) }
    }

    /// Suspends for `duration` from now.
    package func sleep(for duration: Duration) async throws {
        try await sleep(now().advanced(by: duration))
    }
}
