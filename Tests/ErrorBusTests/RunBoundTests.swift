import ErrorBus
import ErrorBusTesting
import Testing

/// What bounds a run and a job: the bus's limit on each run, a job's time limit while it waits
/// for a slot, and a cancellation of a job while it runs.
@Suite(.timeLimit(.minutes(1)))
struct RunBoundTests {
    @Test func aRunThatNeverEndsIsCancelledAtTheAttemptTimeoutAndFailsTransient() async throws {
        var configuration = ErrorBusConfiguration.forTesting
        configuration.attemptTimeout = .seconds(30)
        try await withRunningBus(configuration: configuration) { bus, clock, events in
            let runs = Counter()
            let cancelled = Flag(false)
            // Its first run is in this task's child: the test goes on while it hangs.
            async let submitted = bus.submit(.sync(0)) {
                runs.increment()
                do {
                    // A request that never gets an answer, until its task is cancelled.
                    try await Task.sleep(for: .seconds(3_600))
                } catch {
                    cancelled.set(true)
                    throw error
                }
            } completion: { _ in }
            // Only once the run's own deadline waits on the clock.
            await clock.sleepers(atLeast: 1)
            clock.advance(by: .seconds(30))
            let opened = try #require(try await events.next(.incidentOpened).incident)
            #expect(opened.fingerprint.cause == "attemptTimedOut")
            #expect(opened.category.kind == .transient)
            #expect(opened.text.title == "Run timed out")
            guard case .parked(opened.id) = await submitted else {
                Issue.record("a run cut off by the attempt timeout should park under its incident")
                return
            }
            #expect(cancelled.isSet)
            #expect(runs.count == 1)
        }
    }

    @Test func aJobsTimeLimitCountsItsWaitForASlot() async throws {
        var configuration = ErrorBusConfiguration.forTesting
        configuration.concurrency = .fixed(1)
        try await withRunningBus(configuration: configuration) { bus, clock, _ in
            let running = Barrier(count: 2)
            let finish = Barrier(count: 2)
            async let first: Void = bus.perform(.sync(0)) {
                await running.arriveAndWait()
                await finish.arriveAndWait()
            }
            await running.arriveAndWait()
            var waiting = Job.sync(1)
            waiting.expiresAfter = .seconds(5)
            let ran = Flag(false)
            async let second: Result<Void, JobStopped> = {
                do throws(JobStopped) {
                    try await bus.perform(waiting) { ran.set(true) }
                    return .success(())
                } catch {
                    return .failure(error)
                }
            }()
            await clock.sleepers(atLeast: 1)
            clock.advance(by: .seconds(5))
            guard case .failure(let stopped) = await second else {
                Issue.record("a job whose time ran out while it waited for a slot ran")
                return
            }
            #expect(stopped.reason == .expired)
            #expect(!ran.isSet)
            await finish.arriveAndWait()
            try await first
        }
    }

    @Test func aJobCancelledWhileItRunsAsACanaryStopsWhenItsRunEnds() async throws {
        try await withRunningBus { bus, clock, events in
            let running = Barrier(count: 2)
            let finish = Barrier(count: 2)
            let runs = Counter()
            let stopped = OneShotBox<JobStopped>()
            _ = await bus.submit(.sync(0)) {
                // Its first run fails and parks it; its second, as the canary, hangs until let go.
                if runs.increment() > 1 {
                    await running.arriveAndWait()
                    await finish.arriveAndWait()
                }
                throw TestFailure.transient
            } completion: { outcome in
                if case .stopped(let stop) = outcome { stopped.set(stop) }
            }
            let opened = try #require(try await events.next(.incidentOpened).incident)
            clock.advance(by: try #require(try await events.next(.policyScheduled).incident?.next?.delay))
            await running.arriveAndWait()
            #expect(try await bus.cancel(job: Job.sync(0).id, service: "sync") == .whenRunEnds)
            await finish.arriveAndWait()
            let stop = try #require(await stopped.value)
            #expect(stop.reason == .cancelledByOperator)
            #expect(stop.incident == opened.id)
            // Its failure still counts; it is not held again.
            #expect(try await bus.incident(opened.id).failures == 2)
            #expect(await bus.snapshot().parkedJobs == 0)
            await #expect(throws: ErrorBusError.noSuchJob(service: "sync", id: Job.sync(0).id)) {
                try await bus.cancel(job: Job.sync(0).id, service: "sync")
            }
        }
    }

}
