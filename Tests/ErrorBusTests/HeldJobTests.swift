import ErrorBus
import ErrorBusTesting
import Testing

/// The bus is the one owner of where a job waits: a service asks it, and the answer follows a job
/// that parks again under another incident or waits for the retry budget.
@Suite(.timeLimit(.minutes(1)))
struct HeldJobTests {
    @Test func aJobReleasedIntoAnotherIncidentIsFoundThereRetriedAndCancelled() async throws {
        try await withRunningBus { bus, clock, events in
            let apiDown = Flag(true)
            let outcomes = OutcomeLog()
            for number in 0..<3 {
                _ = await bus.submit(.sync(number)) {
                    if apiDown.isSet { throw TestFailure.transient }
                } completion: { outcomes.record(number, $0) }
            }
            let outage = try #require(try await events.next(.incidentOpened).incident)
            #expect(await bus.heldJobs().map(\.incident) == [outage.id, outage.id, outage.id])

            // The job whose failure opened it failed itself; the two others merely wait.
            #expect(await bus.heldJobs().map(\.hasFailed) == [false, false, true])

            // An operator pauses sync while the API is down: when the outage's canary (a job that
            // merely waited) succeeds, its release finds sync held by the pause, and parks the
            // other two there.
            let pause = await bus.pause("sync")
            apiDown.set(false)
            clock.advance(by: try #require(try await events.next(.policyScheduled).incident?.next?.delay))
            #expect(try await events.next(.incidentResolved).incident?.id == outage.id)
            #expect(await outcomes.next() == "1 succeeded")

            // The job whose failure opened the outage counts its one run; the one that merely
            // waited has none.
            #expect(await bus.heldJob(id: Job.sync(0).id, service: "sync") == HeldJob(job: .sync(0), incident: pause, runs: 1))
            #expect(await bus.heldJobs(service: "sync") == [HeldJob(job: .sync(2), incident: pause), HeldJob(job: .sync(0), incident: pause, runs: 1)])
            #expect(await bus.heldJobs(service: "loader").isEmpty)
            #expect(await bus.snapshot().heldByService == ["sync": 2])

            try await bus.cancel(job: Job.sync(2).id, service: "sync")
            #expect(await outcomes.next() == "2 cancelledByOperator")
            #expect(await bus.heldJob(id: Job.sync(2).id, service: "sync") == nil)

            // Retrying the job retries the incident that holds it now: the pause, which releases.
            #expect(try await bus.retry(job: Job.sync(0).id, service: "sync") == pause)
            #expect(await outcomes.next() == "0 succeeded")
            #expect(await bus.heldJobs().isEmpty)
            await #expect(throws: ErrorBusError.noSuchJob(service: "sync", id: Job.sync(0).id)) {
                try await bus.retry(job: Job.sync(0).id, service: "sync")
            }
        }
    }

    @Test func aRetryWaitingForTheBudgetIsHeldWithoutAnIncidentAndRunsWhenRetried() async throws {
        var configuration = ErrorBusConfiguration.forTesting
        configuration.retryBudget = .init(successRatio: 0, floorPerMinute: 1, capacity: 1)
        try await withRunningBus(configuration: configuration) { bus, _, events in
            await bus.connect(ClosureResponder { _, _ in .handle(.retry) }, to: "sync")
            let runs = Counter()
            let outcomes = OutcomeLog()
            for number in 0..<2 {
                // Fails twice, then works: the first job's retry takes the only token.
                _ = await bus.submit(.sync(number)) {
                    if runs.increment() <= 3 { throw TestFailure.transient }
                } completion: { outcomes.record(number, $0) }
            }
            try await events.next(.budgetExhausted)
            #expect(await bus.heldJobs(service: "sync").contains(HeldJob(job: .sync(1), incident: nil)))
            let waiting = await bus.heldJobs(service: "sync")
            #expect(waiting.allSatisfy { $0.incident == nil })
            #expect(await bus.snapshot().heldByService == ["sync": waiting.count])

            // An operator's retry runs it now, outside the budget (the clock never moves).
            let first = try #require(waiting.first)
            #expect(try await bus.retry(job: first.job.id, service: "sync") == nil)
            #expect(await outcomes.next() == "\(first.job.id.dropFirst("item-".count)) succeeded")

            // And one that still waits can be cancelled.
            for held in await bus.heldJobs(service: "sync") {
                try await bus.cancel(job: held.job.id, service: "sync")
                #expect(await outcomes.next()?.hasSuffix(" cancelledByOperator") == true)
            }
            #expect(await bus.snapshot().waitingForBudget == 0)
        }
    }
}

/// The final outcomes of submitted jobs, in the order they came.
final class OutcomeLog: Sendable {
    private let stream: AsyncStream<String>
    private let continuation: AsyncStream<String>.Continuation

    init() {
        (stream, continuation) = AsyncStream.makeStream()
    }

    func record(_ number: Int, _ outcome: JobOutcome) {
        switch outcome {
        case .succeeded: continuation.yield("\(number) succeeded")
        case .stopped(let stopped): continuation.yield("\(number) \(stopped.reason)")
        }
    }

    /// The next outcome: `"2 succeeded"`, `"1 cancelledByOperator"`.
    func next() async -> String? {
        var iterator = stream.makeAsyncIterator()
        return await iterator.next()
    }
}
