#if canImport(FoundationEssentials)
package import FoundationEssentials
#else
package import Foundation
#endif

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
    /// The wall-clock time of the timeline's start, read once.
    package let startDate: Date

    /// A timeline of `clock` from now, its start by the wall clock read once.
    package init<C: Clock>(_ clock: C) where C.Duration == Duration {
        self.init(clock, startDate: Date())
    }

    package init<C: Clock>(_ clock: C, startDate: Date) where C.Duration == Duration {
        let origin = clock.now
        self.startDate = startDate
        now = { TimelineInstant(offset: origin.duration(to: clock.now)) }
        sleep = { deadline in try await clock.sleep(until: origin.advanced(by: deadline.offset), tolerance: nil) }
    }

    /// Suspends for `duration` from now.
    package func sleep(for duration: Duration) async throws {
        try await sleep(now().advanced(by: duration))
    }

    /// The wall-clock time of `instant`, for people: the start's plus the time since on the
    /// injected clock (which a manual clock in tests moves, and a change of the system's time
    /// does not).
    package func date(of instant: TimelineInstant) -> Date {
        startDate.addingTimeInterval(Double(instant.offset.components.seconds) + Double(instant.offset.components.attoseconds) * 1e-18)
    }
}
