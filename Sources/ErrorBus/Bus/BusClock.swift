/// A point on the bus's timeline: the time since the bus was created, on its clock.
///
/// The bus keeps every deadline as one of these, so that its state is the same concrete type
/// whatever clock it was given; only sleeping and reading the time go through that clock.
struct BusInstant: InstantProtocol, CustomStringConvertible {
    typealias Duration = Swift.Duration

    let offset: Duration

    func advanced(by duration: Duration) -> BusInstant {
        BusInstant(offset: offset + duration)
    }

    func duration(to other: BusInstant) -> Duration {
        other.offset - offset
    }

    static func < (lhs: BusInstant, rhs: BusInstant) -> Bool {
        lhs.offset < rhs.offset
    }

    var description: String { "t+\(offset)" }
}

/// The clock the bus was given, seen through its timeline.
struct BusClock: Sendable {
    let now: @Sendable () -> BusInstant
    let sleep: @Sendable (BusInstant) async throws -> Void

    init<C: Clock>(_ clock: C) where C.Duration == Duration {
        let origin = clock.now
        now = { BusInstant(offset: origin.duration(to: clock.now)) }
        sleep = { deadline in try await clock.sleep(until: origin.advanced(by: deadline.offset), tolerance: nil) }
    }
}
