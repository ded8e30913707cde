import ErrorBus
import ErrorBusTesting
import Synchronization
import Testing

/// The bus runs each scope's jobs through its adaptive concurrency limit: first runs and
/// released jobs take slots, wait for one in order, park when an incident holds the scope, and
/// a server's pacing holds them back until its reset.
@Suite(.timeLimit(.minutes(1)))
struct ConcurrencySlotTests {
    @Test func aScopeNeverRunsMoreJobsThanItsLimitAndStartsSlow() async throws {
        var configuration = ErrorBusConfiguration.forTesting
        configuration.concurrency = .init(maximum: 4)
        try await withRunningBus(configuration: configuration) { bus, _, _ in
            let gauge = Gauge()
            await withTaskGroup(of: Void.self) { group in
                for number in 0..<40 {
                    group.addTask {
                        _ = try? await bus.perform(.sync(number)) {
                            gauge.enter()
                            for _ in 0..<20 { await Task.yield() }
                            gauge.leave()
                        }
                    }
                }
            }
            #expect(gauge.peak <= 4)
            #expect(gauge.entered == 40)
            let limit = try #require(await bus.snapshot().concurrency.first)
            #expect(limit == ScopeConcurrency(scope: "api.test", limit: 4, inFlight: 0, waiting: 0, isHeld: false))
        }
    }

    @Test func backPressureHalvesTheLimitAndTheReleaseStartsSlow() async throws {
        var configuration = ErrorBusConfiguration.forTesting
        configuration.concurrency = .init(maximum: 16)
        try await withRunningBus(configuration: configuration) { bus, clock, events in
            // Fifteen successes: slow start from one to the maximum.
            for number in 0..<15 { try await bus.perform(.sync(number)) {} }
            #expect(await bus.snapshot().concurrency.first?.limit == 16)

            // The server sheds load: the limit halves (once per round trip; on this clock, whose
            // round trips take no time, once per failure before the incident holds the scope:
            // the first failures after fifteen successes look like a share of the scope's runs
            // failing, until a few in a row say it serves no more), and the incident holds it.
            let down = Flag(true)
            let gauge = Gauge()
            for number in 100..<140 {
                _ = await bus.submit(.sync(number)) {
                    gauge.enter()
                    defer { gauge.leave() }
                    if down.isSet { throw TestFailure.transient }
                    for _ in 0..<50 { await Task.yield() }
                } completion: { _ in }
            }
            let held = try #require(await bus.snapshot().concurrency.first)
            #expect(held.limit <= 8 && held.isHeld)

            // The cause is gone: the parked jobs are released through the limit, from one.
            down.set(false)
            gauge.reset()
            clock.advance(by: try #require(try await events.next(.policyScheduled).incident?.next?.delay))
            try await events.next(.incidentResolved)
            let after = try #require(await bus.snapshot().concurrency.first)
            #expect(!after.isHeld && after.inFlight == 0)
            // The canary and the 39 other parked jobs; the old fixed release ran 16 at once.
            #expect(gauge.entered == 40)
            #expect(gauge.peak < 16)
        }
    }

    @Test func runsWaitingForASlotParkWhenAnIncidentHoldsTheScope() async throws {
        var configuration = ErrorBusConfiguration.forTesting
        configuration.concurrency = .fixed(1)
        try await withRunningBus(configuration: configuration) { bus, _, _ in
            let (opened, open) = AsyncStream<Void>.makeStream()
            let first = Task {
                await bus.submit(.sync(0)) {
                    for await _ in opened { break }
                    throw TestFailure.transient
                } completion: { _ in }
            }
            try await waitFor(bus) { $0.inFlight == 1 }
            let second = Task { await bus.submit(.sync(1)) {} completion: { _ in } }
            try await waitFor(bus) { $0.waiting == 1 }
            open.yield()
            guard case .parked(let incident?) = await first.value, case .parked(let same?) = await second.value else {
                Issue.record("both jobs should be parked under the incident")
                return
            }
            #expect(incident == same)
            #expect(await bus.snapshot().concurrency.first?.waiting == 0)
        }
    }

    /// A long run that lends its slot (an upload whose body has been on its way for seconds)
    /// lets the scope's next job run beside it though the slow start is at one slot, counts
    /// toward the maximum still.
    @Test func aRunThatLendsItsSlotLetsTheNextJobRunUpToTheMaximum() async throws {
        var configuration = ErrorBusConfiguration.forTesting
        configuration.concurrency = .init(maximum: 2)
        try await withRunningBus(configuration: configuration) { bus, _, _ in
            let (opened, open) = AsyncStream<Void>.makeStream()
            let long = Task {
                try await bus.perform(.sync(0)) {
                    ErrorBus.currentSlot?.lend()
                    ErrorBus.currentSlot?.lend()
                    for await _ in opened { break }
                }
            }
            try await waitFor(bus) { $0.inFlight == 1 }
            #expect(await bus.snapshot().concurrency.first?.limit == 1)
            // The slow start is at one slot, held by the long run: the next job runs beside it.
            try await bus.perform(.sync(1)) {}
            // Its success grew the limit to 2; the long run holds a slot of the maximum (2),
            // so a job that never ends and a third wait for one: the maximum still bounds them.
            let (never, _) = AsyncStream<Void>.makeStream()
            let second = Task { try await bus.perform(.sync(2)) { for await _ in never {} } }
            try await waitFor(bus) { $0.inFlight == 2 }
            let third = Task { try await bus.perform(.sync(3)) {} }
            try await waitFor(bus) { $0.waiting == 1 }
            open.yield()
            try await long.value
            try await third.value
            second.cancel()
            _ = try? await second.value
        }
    }

    @Test func aRunWaitingForASlotCanBeCancelled() async throws {
        var configuration = ErrorBusConfiguration.forTesting
        configuration.concurrency = .fixed(1)
        try await withRunningBus(configuration: configuration) { bus, _, _ in
            let (opened, open) = AsyncStream<Void>.makeStream()
            let first = Task { try await bus.perform(.sync(0)) { for await _ in opened { break } } }
            try await waitFor(bus) { $0.inFlight == 1 }
            let second = Task { try await bus.perform(.sync(1)) {} }
            try await waitFor(bus) { $0.waiting == 1 }
            second.cancel()
            let stopped = await #expect(throws: JobStopped.self) { try await second.value }
            #expect(stopped?.reason == .taskCancelled)
            open.yield()
            try await first.value
            #expect(await bus.snapshot().concurrency.first?.waiting == 0)
        }
    }

    @Test func aPacedScopeStartsNothingBeforeTheReset() async throws {
        try await withRunningBus { bus, clock, _ in
            try await bus.perform(.sync(0)) {}
            bus.pace(scope: "api.test", for: .seconds(30))
            let ran = Flag(false)
            let paced = Task { try await bus.perform(.sync(1)) { ran.set(true) } }
            try await waitFor(bus) { $0.waiting == 1 }
            clock.advance(by: .seconds(29))
            #expect(!ran.isSet)
            // Another scope is not paced.
            try await bus.perform(.sync(2, scope: "other.test")) {}
            clock.advance(by: .seconds(1))
            try await paced.value
            #expect(ran.isSet)
        }
    }

    /// Waits until the scope's slots satisfy `condition`; the bus's state changes in other
    /// tasks, with no event to await.
    private func waitFor(_ bus: ErrorBus, _ condition: (ScopeConcurrency) -> Bool) async throws {
        while true {
            if let limit = await bus.snapshot().concurrency.first(where: { $0.scope == "api.test" }), condition(limit) { return }
            await Task.yield()
        }
    }
}

/// Counts the operations under way, and the most at once.
final class Gauge: Sendable {
    private struct State {
        var now = 0
        var peak = 0
        var entered = 0
    }

    private let state = Mutex(State())

    var peak: Int { state.withLock { $0.peak } }
    var entered: Int { state.withLock { $0.entered } }

    func enter() {
        state.withLock {
            $0.now += 1
            $0.entered += 1
            $0.peak = max($0.peak, $0.now)
        }
    }

    func leave() {
        state.withLock { $0.now -= 1 }
    }

    func reset() {
        state.withLock { $0 = State(now: $0.now) }
    }
}
