import ErrorBus
import ErrorBusTesting
import Testing

@Suite(.timeLimit(.minutes(1)))
struct ReachabilityTests {
    @Test func probeBacksOffAtTheConfiguredIntervalsUntilReachable() async throws {
        let clock = ManualClock()
        let down = Flag(true)
        let probe = ScriptedProbe(
            clock: clock,
            answers: Array(repeating: .unreachable(reason: "connection refused"), count: 3)
        )
        try await withRunningBus(clock: clock, probe: probe) { bus, clock, events in
            let delivered = Counter()
            _ = await bus.submit(.sync(0)) {
                if down.isSet { throw TestFailure.unreachable }
                delivered.increment()
            } completion: { _ in }

            var probeCalls = probe.calls.makeAsyncIterator()
            var delays: [Duration] = []
            for interval: Int64 in [1, 2, 4, 8] {
                let scheduled = try #require(try await events.next(.policyScheduled).incident?.next)
                // Full jitter: anywhere from nothing to the interval.
                #expect(scheduled.step == .probe && scheduled.delay <= .seconds(interval))
                delays.append(scheduled.delay)
                if interval == 8 { down.set(false) }
                clock.advance(by: scheduled.delay)
                _ = await probeCalls.next()
            }
            try await events.next(.incidentResolved)
            // Each probe when its wait ended.
            #expect(probe.callTimes == delays.indices.map { index in ManualClock.Instant(offset: delays[...index].reduce(.zero, +)) })
            #expect(events.count(of: .probeFailed) == 3)
            #expect(delivered.count == 1)
        }
    }

    @Test func probeIntervalStopsGrowingAtTheCap() async throws {
        var configuration = ErrorBusConfiguration.forTesting
        configuration.reachability = .init(initialInterval: .seconds(1), factor: 2, maximumInterval: .seconds(30))
        let clock = ManualClock()
        let probe = ScriptedProbe(clock: clock, otherwise: .unreachable(reason: "no route to host"))
        try await withRunningBus(configuration: configuration, clock: clock, probe: probe) { bus, clock, events in
            await bus.report(Failure(TestFailure.unreachable, job: .sync(0)))
            var delays: [Duration] = []
            for _ in 0..<8 {
                let delay = try #require(try await events.next(.policyScheduled).incident?.next?.delay)
                delays.append(delay)
                clock.advance(by: delay)
            }
            #expect(zip(delays, [1, 2, 4, 8, 16, 30, 30, 30].map { Duration.seconds($0) }).allSatisfy { $0 <= $1 })
            // Past the cap, no wait is longer than the cap; the later ones exceed the early caps.
            #expect(delays.suffix(3).contains { $0 > .seconds(8) })
        }
    }

    @Test func aNetworkChangeProbesWithinItsSpread() async throws {
        var configuration = ErrorBusConfiguration.forTesting
        configuration.reachability.initialInterval = .seconds(60)
        let clock = ManualClock()
        let probe = ScriptedProbe(clock: clock)
        try await withRunningBus(configuration: configuration, clock: clock, probe: probe) { bus, clock, events in
            clock.advance(by: .seconds(100))
            await bus.report(Failure(TestFailure.unreachable, job: .sync(0)))
            let first = try #require(try await events.next(.policyScheduled).incident?.next?.delay)
            await bus.networkChanged()
            // Sooner than the schedule, within the second the spread allows (unless the schedule
            // was sooner still).
            let soon = try #require(try await events.next(.policyScheduled).incident?.next?.delay)
            #expect(soon <= .seconds(1) && soon < first)
            clock.advance(by: soon)
            var calls = probe.calls.makeAsyncIterator()
            #expect(await calls.next() == ManualClock.Instant(offset: .seconds(100) + soon))
            let resolved = try await events.next(.incidentResolved)
            #expect(resolved.incident?.resolution == .recovered)
        }
    }

    @Test func releaseStopsWhenTheCauseReturnsMidRelease() async throws {
        var configuration = ErrorBusConfiguration.forTesting
        configuration.concurrency = .fixed(1)
        let clock = ManualClock()
        let probe = ScriptedProbe(clock: clock)
        try await withRunningBus(configuration: configuration, clock: clock, probe: probe) { bus, clock, events in
            let down = Flag(true)
            let deliveries = Counter()
            let order = OrderLog()
            for number in 0..<50 {
                _ = await bus.submit(.sync(number)) {
                    if down.isSet { throw TestFailure.unreachable }
                    order.append(number)
                    // The API goes down again after ten deliveries.
                    if deliveries.increment() == 10 { down.set(true) }
                } completion: { _ in }
            }
            #expect(await bus.snapshot().parkedJobs == 50)

            down.set(false)
            clock.advance(by: .seconds(1))
            let stopped = try #require(try await events.next(.releaseStopped).incident)
            let rescheduled = try #require(try await events.next(.policyScheduled).incident)
            #expect(rescheduled.next?.step == .probe)
            #expect(stopped.released == 11)
            #expect(deliveries.count == 10)
            #expect(await bus.snapshot().parkedJobs == 40)
            #expect(events.count(of: .incidentResolved) == 0)

            down.set(false)
            clock.advance(by: try #require(rescheduled.next?.delay))
            let resolved = try #require(try await events.next(.incidentResolved).incident)
            #expect(resolved.failures == 2)
            #expect(deliveries.count == 50)
            // The jobs that failed under the incident go last: the one whose failure opened it
            // and the one that failed mid-release.
            #expect(order.values == Array(1..<11) + Array(12..<50) + [0, 11])
        }
    }

    @Test func withoutAProbeACanaryTestsTheScope() async throws {
        try await withRunningBus(probe: nil) { bus, clock, events in
            let down = Flag(true)
            let runs = Counter()
            for number in 0..<3 {
                _ = await bus.submit(.sync(number)) {
                    runs.increment()
                    if down.isSet { throw TestFailure.unreachable }
                } completion: { _ in }
            }
            #expect(runs.count == 1)
            let scheduled = try #require(try await events.next(.policyScheduled).incident?.next)
            clock.advance(by: scheduled.delay)
            try await events.next(.canaryFailed)
            #expect(runs.count == 2)
            down.set(false)
            clock.advance(by: try #require(try await events.next(.policyScheduled).incident?.next?.delay))
            try await events.next(.incidentResolved)
            #expect(runs.count == 5)
        }
    }
}

/// Records the order in which operations completed.
final class OrderLog: Sendable {
    private let storage = Mutex<[Int]>([])
    func append(_ value: Int) { storage.withLock { $0.append(value) } }
    var values: [Int] { storage.withLock { $0 } }
}

import Synchronization
