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
}
