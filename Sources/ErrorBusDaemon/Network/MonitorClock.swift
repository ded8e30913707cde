/// A point on the monitor's timeline: the time since the monitor was created, on its clock.
///
/// Keeping instants as offsets makes the debouncing state one concrete type whatever clock was
/// injected; only reading the time and sleeping go through that clock.
struct MonitorInstant: InstantProtocol, CustomStringConvertible {
    typealias Duration = Swift.Duration

    let offset: Duration

    func advanced(by duration: Duration) -> MonitorInstant {
        MonitorInstant(offset: offset + duration)
    }

    func duration(to other: MonitorInstant) -> Duration {
        other.offset - offset
    }

    static func < (lhs: MonitorInstant, rhs: MonitorInstant) -> Bool {
        lhs.offset < rhs.offset
    }

    var description: String { "t+\(offset)" }
}

/// The clock the monitor was given, seen through its timeline.
struct MonitorClock: Sendable {
    let now: @Sendable () -> MonitorInstant
    let sleep: @Sendable (MonitorInstant) async throws -> Void

    init<C: Clock>(_ clock: C) where C.Duration == Duration {
        let origin = clock.now
        now = { MonitorInstant(offset: origin.duration(to: clock.now)) }
        sleep = { deadline in try await clock.sleep(until: origin.advanced(by: deadline.offset), tolerance: nil) }
    }
}
