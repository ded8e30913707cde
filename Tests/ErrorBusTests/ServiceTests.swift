import ErrorBus
import ErrorBusTesting
import InMemoryLogging
import Logging
import MetricsTestKit
import ServiceLifecycle
import ServiceLifecycleTestKit
import Testing

/// The bus as a swift-service-lifecycle service, and its incident lines and counters.
@Suite(.timeLimit(.minutes(1)))
struct ServiceTests {
    /// A service that waits for one job the bus parks.
    struct Waiter: Service {
        let bus: ErrorBus
        let outcome: AsyncStream<JobStopped?>.Continuation

        func run() async {
            do throws(JobStopped) {
                try await bus.perform(.sync(0)) { throw TestFailure.unreachable }
                outcome.yield(nil)
            } catch {
                outcome.yield(error)
            }
            // Its work ended with the bus: it waits for its own turn to stop.
            try? await gracefulShutdown()
        }
    }

    @Test func aGracefulShutdownStopsTheBusFirstAndAnswersItsParkedJobsWithoutFailingTheGroup() async throws {
        let logger = Logger(label: "test", factory: { _ in SwiftLogNoOpLogHandler() })
        let bus = ErrorBus(configuration: .forTesting, clock: ManualClock(), logger: logger)
        let (outcomes, outcome) = AsyncStream.makeStream(of: JobStopped?.self)
        try await testGracefulShutdown { trigger in
            let reporter = IncidentReporter(bus: bus, logger: logger)
            let group = ServiceGroup(services: [reporter, Waiter(bus: bus, outcome: outcome), bus], logger: logger)
            async let running: Void = group.run()
            await bus.waitUntilParked(1)
            trigger.triggerGracefulShutdown()
            try await running
        }
        outcome.finish()
        var iterator = outcomes.makeAsyncIterator()
        let stopped = try #require(await iterator.next() ?? nil)
        #expect(stopped.reason == .shutdown)
    }

    @Test func theReporterTellsAndCountsEachStepOfAnIncident() async throws {
        let clock = ManualClock()
        let probe = ScriptedProbe(clock: clock)
        let lines = InMemoryLogHandler()
        let metrics = TestMetrics()
        let down = Flag(true)
        try await withRunningBus(clock: clock, probe: probe) { bus, clock, events in
            let reporter = IncidentReporter(bus: bus, logger: Logger(label: "test", factory: { _ in lines }), metricsFactory: metrics)
            for number in 0..<3 {
                _ = await bus.submit(.sync(number)) {
                    if down.isSet { throw TestFailure.unreachable }
                } completion: { _ in }
            }
            await bus.waitUntilParked(3)
            down.set(false)
            let scheduled = try #require(try await events.next(.policyScheduled).incident?.next)
            clock.advance(by: scheduled.delay)
            try await events.next(.incidentResolved)
            for event in events.seen { reporter.report(event) }
        }
        let messages = lines.entries.map { "\($0.level) \($0.message)" }
        #expect(messages.count == 2)
        #expect(messages.first?.hasPrefix("warning incident 1 opened: Test failure") == true)
        #expect(messages.last?.hasPrefix("notice incident 1 recovered after") == true)
        #expect(messages.last?.hasSuffix("1 failure absorbed, 3 jobs released, 0 dead-lettered") == true)
        #expect(lines.entries.first?.metadata["errorbus.category"] == "unreachable")
        let dimensions = [("service", "sync"), ("category", "unreachable")]
        #expect(try metrics.expectCounter("errorbus_incidents_opened_total", dimensions).lastValue == 1)
        #expect(try metrics.expectCounter("errorbus_incidents_resolved_total", dimensions).lastValue == 1)
        #expect(try metrics.expectCounter("errorbus_failures_absorbed_total", dimensions).lastValue == 1)
    }

    /// Failures are counted as an incident absorbs them, not at its end: each event counts those
    /// before it, and `countAbsorbed` (called before each exposition) those since; a snapshot
    /// taken before the incident resolved, read after, counts nothing again.
    @Test func theReporterCountsFailuresAsTheyAreAbsorbedAndEachOnce() async throws {
        let metrics = TestMetrics()
        let bus = ErrorBus(logger: Logger(label: "test", factory: { _ in SwiftLogNoOpLogHandler() }))
        let reporter = IncidentReporter(bus: bus, logger: Logger(label: "test", factory: { _ in SwiftLogNoOpLogHandler() }), metricsFactory: metrics)
        reporter.declareCounters(services: ["sync"])
        let dimensions = [("service", "sync"), ("category", "rate_limited")]
        let absorbed = try metrics.expectCounter("errorbus_failures_absorbed_total", dimensions)
        #expect(absorbed.totalValue == 0, "there from the start, at 0")

        let events = await bus.subscribe()
        let failure = Failure(category: .rateLimited(retryAfter: nil), scope: "api", cause: "429", service: "sync", text: OperatorText(title: "Rate limited", message: "429"))
        var incident: IncidentID?
        for _ in 0..<10 { incident = await bus.report(failure) ?? incident }
        let id = try #require(incident)
        var iterator = events.makeAsyncIterator()
        let opened = try #require(await iterator.next())
        reporter.report(opened)
        #expect(absorbed.totalValue == 1, "the event counts the failure it carries")
        let before = await bus.snapshot()
        reporter.countAbsorbed(before)
        #expect(absorbed.totalValue == 10, "an exposition counts those absorbed since, while the incident is open")

        try await bus.discard(incident: id)
        while let event = await iterator.next() {
            reporter.report(event)
            if event.kind == .incidentResolved { break }
        }
        reporter.countAbsorbed(before)
        #expect(absorbed.totalValue == 10, "neither the end nor a stale snapshot counts them again")
        #expect(try metrics.expectCounter("errorbus_incidents_resolved_total", dimensions).totalValue == 1)
    }
}
