/// The time the sandbox reads and sleeps on: offsets from the moment it was created.
///
/// Fault schedules, token lifetimes, `slow` delays and request timestamps all use it, so a test
/// can hand the sandbox a manual clock and move time instead of waiting for it. Wraps any
/// `Clock` with `Duration` as its duration type.
public struct SandboxClock: Sendable {
    private let _now: @Sendable () -> Duration
    private let _sleep: @Sendable (Duration) async throws -> Void

    /// A sandbox clock reading `clock`, with its origin at `clock.now`.
    public init<C: Clock>(_ clock: C) where C.Duration == Duration {
        let origin = clock.now
        _now = { origin.duration(to: clock.now) }
        _sleep = { offset in try await clock.sleep(until: origin.advanced(by: offset), tolerance: nil) }
    }

    /// The continuous (monotonic, counting suspended time) clock: what the executable uses.
    public static var continuous: SandboxClock { SandboxClock(ContinuousClock()) }

    /// Time since the origin.
    public var now: Duration { _now() }

    /// Suspends until `offset` after the origin (at once if that has passed), or throws on cancellation.
    public func sleep(until offset: Duration) async throws {
        try await _sleep(offset)
    }

    /// Suspends for `duration` from now.
    public func sleep(for duration: Duration) async throws {
        try await _sleep(now + duration)
    }
}
