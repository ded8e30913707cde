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
    /// Today's date, as the timeline's clock has it: the system's for the system's clocks,
    /// the start's plus the time since for any other (a test's manual clock).
    private let today: @Sendable () -> Date

    /// A timeline of `clock` from now. Dates on it are the system's when `clock` is the
    /// continuous or suspending clock, so that a correction of the system's time (NTP at boot)
    /// shows in them; for any other clock they start at the wall-clock time read once now and
    /// move as `clock` does.
    package init<C: Clock>(_ clock: C) where C.Duration == Duration {
        if clock is ContinuousClock || clock is SuspendingClock {
            self.init(clock, today: { Date() })
        } else {
            self.init(clock, startDate: Date())
        }
    }

    /// A timeline of `clock` from now whose dates start at `startDate` and move as `clock` does.
    package init<C: Clock>(_ clock: C, startDate: Date) where C.Duration == Duration {
        let origin = clock.now
        self.init(clock, today: { startDate.addingTimeInterval(Self.seconds(origin.duration(to: clock.now))) })
    }

    private init<C: Clock>(_ clock: C, today: @escaping @Sendable () -> Date) where C.Duration == Duration {
        let origin = clock.now
        self.today = today
        now = { TimelineInstant(offset: origin.duration(to: clock.now)) }
        sleep = { deadline in try await clock.sleep(until: origin.advanced(by: deadline.offset), tolerance: nil) }
    }

    /// Suspends for `duration` from now.
    package func sleep(for duration: Duration) async throws {
        try await sleep(now().advanced(by: duration))
    }

    /// The wall-clock time of `instant`, for people: today's date less the time since on the
    /// injected clock.
    package func date(of instant: TimelineInstant) -> Date {
        today().addingTimeInterval(-Self.seconds(instant.duration(to: now())))
    }

    private static func seconds(_ duration: Duration) -> Double {
        Double(duration.components.seconds) + Double(duration.components.attoseconds) * 1e-18
    }
}
