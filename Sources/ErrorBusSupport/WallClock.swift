package import Foundation

/// Where sync and the store read the date: the system's, or one that moves with a clock.
///
/// Made from a `Clock`, it starts at the wall-clock time of its making and advances exactly as
/// that clock does: with a test's manual clock, the dates a store records and the ages sync
/// measures move when the test says, and no test sleeps for them.
package struct WallClock: Sendable {
    private let read: @Sendable () -> Date

    /// The system's date.
    package static let system = WallClock { Date() }

    package init(_ read: @escaping @Sendable () -> Date) {
        self.read = read
    }

    /// Dates that start at `origin` and advance as `clock` does.
    package init<C: Clock>(_ clock: C, startingAt origin: Date = Date()) where C.Duration == Duration {
        let start = clock.now
        self.read = { origin.addingTimeInterval(start.duration(to: clock.now).timeInterval) }
    }

    /// Now.
    package func now() -> Date {
        read()
    }
}
