import ErrorBus
import ErrorBusTesting
import Testing

@Suite(.timeLimit(.minutes(1)))
struct ParkingTests {
    @Test func parkingOverflowIsExplicitAndCounted() async throws {
        var configuration = ErrorBusConfiguration.forTesting
        configuration.maxParkedJobs = 3
        try await withRunningBus(configuration: configuration) { bus, _, events in
            var submissions: [Submission] = []
            for number in 0..<5 {
                submissions.append(await bus.submit(.sync(number)) { throw TestFailure.transient } completion: { _ in })
            }
            let parked = submissions.filter { if case .parked = $0 { true } else { false } }
            let refused = submissions.compactMap { submission -> JobStopped? in
                if case .stopped(let stopped) = submission { stopped } else { nil }
            }
            #expect(parked.count == 3)
            #expect(refused.count == 2)
            #expect(refused.allSatisfy { $0.reason == .parkingFull && $0.evaluation == .cancel && $0.incident != nil })

            let overflow = try await events.next(.parkingOverflow)
            #expect(overflow.job == .sync(3))
            #expect(overflow.reason?.contains("3 jobs") == true)
            try await events.next(.parkingOverflow)
            let snapshot = await bus.snapshot()
            #expect(snapshot.overflowedJobs == 2)
            #expect(snapshot.parkedJobs == 3)
        }
    }

    /// A canary repeating a run that failed after 5 s (a large upload cut half way) costs five
    /// tokens: the second waits for them, where one token would have been there.
    @Test(.timeLimit(.minutes(1)))
    func aCanaryCostsATokenPerSecondOfTheRunItRepeats() async throws {
        var configuration = ErrorBusConfiguration.forTesting
        // Six tokens to start, one more every ten seconds; successes add none.
        configuration.retryBudget = .init(successRatio: 0, floorPerMinute: 6, capacity: 10)
        configuration.backoff = .init(base: .milliseconds(1), factor: 1, cap: .milliseconds(1))
        try await withRunningBus(configuration: configuration) { bus, clock, events in
            let runs = TimeLog(clock: clock)
            // The clock moves from one deadline to the next once whatever it woke has done its work.
            let driver = Task {
                while !Task.isCancelled {
                    await clock.sleepers(atLeast: 1)
                    for _ in 0..<100 { await Task.yield() }
                    while clock.wakingCount > 0 { await Task.yield() }
                    _ = clock.advanceToNextDeadline()
                }
            }
            defer { driver.cancel() }
            _ = await bus.submit(.sync(0)) {
                runs.record()
                try await clock.sleep(for: .seconds(5))
                throw TestFailure.transient
            } completion: { _ in }
            // The run fails after 5 s; its canary waits 5 s (the run's length), takes five of the
            // seven tokens, and fails after 5 s; the next, 5 s later, finds three tokens of the
            // five it costs: 20 s more. At one token a canary, it would have run at once.
            let exhausted = try await events.next(.budgetExhausted)
            let wait = try #require(exhausted.delay)
            driver.cancel()
            // (20 s when the clock steps as described; whatever the steps, more than one token
            // short, which a one-token price never is for longer than 10 s here.)
            #expect(wait > .seconds(10) && wait <= .seconds(50), "\(wait) \(runs.times)")
            #expect(runs.times.first == ManualClock.Instant(offset: .zero))
        }
    }

    @Test func aCanaryWaitsForTheRetryBudget() async throws {
        var configuration = ErrorBusConfiguration.forTesting
        configuration.retryBudget = .init(successRatio: 0, floorPerMinute: 1, capacity: 1)
        configuration.backoff = .init(base: .milliseconds(1), factor: 1, cap: .milliseconds(1))
        try await withRunningBus(configuration: configuration) { bus, clock, events in
            let runs = TimeLog(clock: clock)
            _ = await bus.submit(.sync(0)) {
                if runs.record() <= 2 { throw TestFailure.transient }
            } completion: { _ in }
            // First canary: the only token.
            clock.advance(by: try #require(try await events.next(.policyScheduled).incident?.next?.delay))
            try await events.next(.canaryFailed)
            // Second canary: no token left; it waits for the floor's next one, a minute later.
            clock.advance(by: try #require(try await events.next(.policyScheduled).incident?.next?.delay))
            let exhausted = try await events.next(.budgetExhausted)
            let wait = try #require(exhausted.delay)
            #expect(wait > .seconds(59) && wait <= .seconds(60))
            #expect(runs.times.count == 2)
            clock.advance(by: wait)
            try await events.next(.incidentResolved)
            #expect(runs.times.count == 3)
        }
    }
}
