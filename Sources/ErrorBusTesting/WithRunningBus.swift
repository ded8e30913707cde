public import ErrorBus
public import Logging

/// Creates a bus on a manual clock, runs it, hands it to `body` with its clock and an event log
/// subscribed before anything happens, and stops it when `body` returns.
///
/// The bus draws its jitter from a seeded source, so a test sees the same delays every run.
///
/// ```swift
/// try await withRunningBus(probe: probe) { bus, clock, events in
///     // fail a job, then:
///     let opened = try await events.next(.incidentOpened)
///     let scheduled = try await events.next(.policyScheduled)
///     clock.advance(by: scheduled.incident!.next!.delay)
/// }
/// ```
public func withRunningBus<Value>(
    configuration: ErrorBusConfiguration = .forTesting,
    clock: ManualClock = ManualClock(),
    probe: (any ReachabilityProbe)? = nil,
    authenticator: (any Authenticator)? = nil,
    logger: Logger = Logger(label: "errorbus.test", factory: { _ in SwiftLogNoOpLogHandler() }),
    _ body: (ErrorBus, ManualClock, EventLog) async throws -> Value
) async throws -> Value {
    let bus = ErrorBus(
        configuration: configuration,
        clock: clock,
        probe: probe,
        authenticator: authenticator,
        random: SeededRandomNumberGenerator(seed: 42),
        logger: logger
    )
    let events = EventLog(await bus.subscribe(bufferSize: 1_000_000))
    return try await withThrowingTaskGroup(of: Void.self) { group in
        group.addTask { await bus.run() }
        defer { group.cancelAll() }
        return try await body(bus, clock, events)
    }
}

extension ErrorBusConfiguration {
    /// The defaults, except that released jobs start without a random delay and runs have no
    /// time limit: on a manual clock, that delay (``ErrorBusConfiguration/Release/spread``) would
    /// wait for the test to move the clock, and a test waiting for the jobs would stall; and each
    /// run's limit (``ErrorBusConfiguration/attemptTimeout``) would be one more sleeper on the
    /// clock for a test that counts them; and an incident whose cause went away resolves at once
    /// (``ErrorBusConfiguration/settleWindow`` would wait for the test to move the clock); and a
    /// scope's rate does not adapt (``ErrorBusConfiguration/Pacing/adaptsRate``: after a `429`,
    /// each run would wait for its token on the clock). Set them again to test them.
    public static var forTesting: ErrorBusConfiguration {
        var configuration = ErrorBusConfiguration()
        configuration.release.spread = .zero
        configuration.attemptTimeout = nil
        configuration.settleWindow = .zero
        configuration.pacing.adaptsRate = false
        return configuration
    }
}

extension ErrorBus {
    /// Returns once the bus holds at least `count` parked jobs (or has stopped, or the task is
    /// cancelled, e.g. by a test's time limit): a burst of failures has been routed and parked,
    /// and the test may move on.
    public func waitUntilParked(_ count: Int) async {
        await parkedJobs(reaching: count)
    }
}
