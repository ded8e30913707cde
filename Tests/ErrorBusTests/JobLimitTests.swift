import ErrorBus
import ErrorBusTesting
import Testing

/// A job's own limits: how long it may be held, how many runs it may fail, whether it may wait.
@Suite(.timeLimit(.minutes(1)))
struct JobLimitTests {
    @Test func aParkedJobEndsWhenItExpires() async throws {
        let clock = ManualClock()
        let probe = ScriptedProbe(clock: clock, otherwise: .unreachable(reason: "connection refused"))
        try await withRunningBus(clock: clock, probe: probe) { bus, clock, events in
            let runs = Counter()
            var job = Job.sync(0)
            job.expiresAfter = .seconds(90)
            async let outcome: Result<Void, JobStopped> = {
                do throws(JobStopped) {
                    try await bus.perform(job) {
                        runs.increment()
                        throw TestFailure.unreachable
                    }
                    return .success(())
                } catch {
                    return .failure(error)
                }
            }()
            let opened = try #require(try await events.next(.incidentOpened).incident)
            await bus.waitUntilParked(1)
            // The probe keeps failing: only the job's own limit ends its wait.
            clock.advance(by: .seconds(89))
            #expect(await bus.snapshot().parkedJobs == 1)
            clock.advance(by: .seconds(1))
            guard case .failure(let stopped) = await outcome else {
                Issue.record("an expired job succeeded")
                return
            }
            #expect(stopped.reason == .expired)
            #expect(stopped.incident == opened.id)
            #expect(runs.count == 1)
            #expect(await bus.snapshot().parkedJobs == 0)
        }
    }

    @Test func aHeldJobEndsAtItsExpiryWithoutRunningAgain() async throws {
        let clock = ManualClock()
        let down = Flag(true)
        let probe = ScriptedProbe(clock: clock, answers: [.unreachable(reason: "down")])
        try await withRunningBus(clock: clock, probe: probe) { bus, clock, events in
            let runs = Counter()
            var short = Job.sync(1)
            short.expiresAfter = .seconds(1)
            var outcomes: [Int: JobOutcome] = [:]
            let completions = AsyncStream.makeStream(of: (Int, JobOutcome).self)
            for (number, job) in [(0, Job.sync(0)), (1, short)] {
                _ = await bus.submit(job) {
                    runs.increment()
                    if down.isSet { throw TestFailure.unreachable }
                } completion: { completions.continuation.yield((number, $0)) }
            }
            await bus.waitUntilParked(2)
            down.set(false)
            // The first probe fails; by the second the short job's second has long passed.
            var iterator = completions.stream.makeAsyncIterator()
            let scheduled = try #require(try await events.next(.policyScheduled).incident?.next)
            clock.advance(by: max(scheduled.delay, .seconds(1)))
            let first = try #require(await iterator.next())
            outcomes[first.0] = first.1
            let again = try #require(try await events.next(.policyScheduled).incident?.next)
            clock.advance(by: again.delay)
            let second = try #require(await iterator.next())
            outcomes[second.0] = second.1
            guard case .stopped(let stopped) = outcomes[1] else {
                Issue.record("the expired job was not stopped: \(String(describing: outcomes[1]))")
                return
            }
            #expect(stopped.reason == .expired)
            guard case .succeeded = outcomes[0] else {
                Issue.record("the job without a limit did not succeed: \(String(describing: outcomes[0]))")
                return
            }
            // The first job's two runs: the short one, parked as it came, never ran.
            #expect(runs.count == 2)
        }
    }

    @Test func aJobStopsAfterItsMaximumAttempts() async throws {
        try await withRunningBus { bus, clock, events in
            let runs = Counter()
            var job = Job.sync(0)
            job.maxAttempts = 2
            async let outcome: JobStopped? = {
                do throws(JobStopped) {
                    try await bus.perform(job) {
                        runs.increment()
                        throw TestFailure.transient
                    }
                    return nil
                } catch {
                    return error
                }
            }()
            // The incident's canary is this job's second run; it fails again and may not park.
            let scheduled = try #require(try await events.next(.policyScheduled).incident?.next)
            clock.advance(by: scheduled.delay)
            let stopped = try #require(await outcome)
            #expect(stopped.reason == .attemptsExhausted)
            #expect(stopped.failure?.cause == "http503")
            #expect(runs.count == 2)
        }
    }

    @Test func aFailFastJobAnswersAtOnceWhileItsScopeIsHeld() async throws {
        let clock = ManualClock()
        let probe = ScriptedProbe(clock: clock, otherwise: .unreachable(reason: "connection refused"))
        try await withRunningBus(clock: clock, probe: probe) { bus, _, events in
            _ = await bus.submit(.sync(0)) { throw TestFailure.unreachable } completion: { _ in }
            let opened = try #require(try await events.next(.incidentOpened).incident)
            let runs = Counter()
            var request = Job.sync(1)
            request.whenHeld = .failFast
            do throws(JobStopped) {
                _ = try await bus.perform(request) { runs.increment() }
                Issue.record("a fail-fast job ran while its scope was held")
            } catch {
                #expect(error.reason == .held)
                #expect(error.incident == opened.id)
            }
            #expect(runs.count == 0)
            #expect(await bus.snapshot().parkedJobs == 1)
        }
    }

    @Test func aFailFastJobThatFailsOpensTheIncidentWithoutParking() async throws {
        let clock = ManualClock()
        let probe = ScriptedProbe(clock: clock, otherwise: .unreachable(reason: "connection refused"))
        try await withRunningBus(clock: clock, probe: probe) { bus, _, events in
            var request = Job.sync(0)
            request.whenHeld = .failFast
            do throws(JobStopped) {
                try await bus.perform(request) { throw TestFailure.unreachable }
                Issue.record("a failing job succeeded")
            } catch {
                #expect(error.reason == .held)
                #expect(error.failure?.cause == "connectionRefused")
            }
            let opened = try #require(try await events.next(.incidentOpened).incident)
            #expect(await bus.snapshot().parkedJobs == 0)
            // Work that may wait is held back by the incident the request opened.
            guard case .parked(opened.id) = await bus.submit(.sync(1), operation: {}, completion: { _ in }) else {
                Issue.record("a job that may wait was not parked under the request's incident")
                return
            }
        }
    }

    @Test func aJobARespondersRetriesStopsAtItsMaximumAttempts() async throws {
        try await withRunningBus { bus, _, _ in
            await bus.connect(ClosureResponder { _, _ in .handle(.retry) }, to: "sync")
            let runs = Counter()
            var job = Job.sync(0)
            job.maxAttempts = 3
            do throws(JobStopped) {
                try await bus.perform(job) {
                    runs.increment()
                    throw TestFailure.transient
                }
                Issue.record("a failing job succeeded")
            } catch {
                #expect(error.reason == .attemptsExhausted)
            }
            #expect(runs.count == 3)
        }
    }

    @Test func aFailFastRetryThatWouldWaitForTheBudgetEndsAtOnce() async throws {
        var configuration = ErrorBusConfiguration.forTesting
        configuration.retryBudget = .init(successRatio: 0.1, floorPerMinute: 1, capacity: 1)
        try await withRunningBus(configuration: configuration) { bus, _, _ in
            await bus.connect(ClosureResponder { _, _ in .handle(.retry) }, to: "sync")
            let runs = Counter()
            var request = Job.sync(0)
            request.whenHeld = .failFast
            do throws(JobStopped) {
                try await bus.perform(request) {
                    runs.increment()
                    throw TestFailure.transient
                }
                Issue.record("a failing job succeeded")
            } catch {
                #expect(error.reason == .held)
                #expect(error.incident == nil)
            }
            // The first run, and the one retry the budget's single token paid for.
            #expect(runs.count == 2)
        }
    }
}
