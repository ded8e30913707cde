import ErrorBus
import ErrorBusTesting
import Testing

@Suite(.timeLimit(.minutes(1)))
struct ResponderTests {
    @Test func aServiceResponderOverridesTheDefaultPolicy() async throws {
        try await withRunningBus { bus, _, _ in
            // The loader keeps its last good copy when a resource is gone: no dead letter.
            await bus.connect(ClosureResponder { failure, _ in
                failure.cause == "http404" ? .handle(.proceed) : .pass
            }, to: "loader")
            let job = Job(id: "resources/motd", service: "loader", scope: "api.test")
            do throws(JobStopped) {
                _ = try await bus.perform(job) { () async throws -> Void in
                    throw TestFailure(.invalid(reason: "no such resource"), cause: "http404")
                }
                Issue.record("the job should have stopped")
            } catch {
                #expect(error.evaluation == .proceed)
                #expect(error.reason == .handledByResponder)
                #expect(error.failure?.cause == "http404")
            }
            let snapshot = await bus.snapshot()
            #expect(snapshot.incidents.isEmpty)
            #expect(snapshot.recentlyResolved.isEmpty)

            // Other services are not affected by the loader's responder.
            do throws(JobStopped) {
                _ = try await bus.perform(.sync(0)) { () async throws -> Void in
                    throw TestFailure(.invalid(reason: "no such resource"), cause: "http404")
                }
            } catch {
                #expect(error.reason == .deadLettered)
            }
        }
    }

    @Test func theLastConnectedResponderAnswersFirstAndCanPass() async throws {
        try await withRunningBus { bus, _, _ in
            let consulted = OrderLog()
            await bus.connect(ClosureResponder { _, _ in consulted.append(1); return .handle(.cancel) }, to: "sync")
            let passing = await bus.connect(ClosureResponder { _, _ in consulted.append(2); return .pass }, to: "sync")
            let aborting = await bus.connect(ClosureResponder { _, _ in consulted.append(3); return .handle(.abort) }, to: "sync")

            func stopOnce() async -> JobStopped? {
                do throws(JobStopped) {
                    _ = try await bus.perform(.sync(0)) { () async throws -> Void in throw TestFailure.transient }
                    return nil
                } catch {
                    return error
                }
            }
            #expect(await stopOnce()?.evaluation == .abort)
            #expect(consulted.values == [3])

            await bus.disconnect(aborting)
            #expect(await stopOnce()?.evaluation == .cancel)
            #expect(consulted.values == [3, 2, 1])

            await bus.disconnect(passing)
            #expect(await bus.snapshot().incidents.isEmpty)
        }
    }

    @Test func aResponderCanRewriteAFailureBeforeTheDefaultPolicy() async throws {
        try await withRunningBus { bus, _, events in
            // The auth service's own 401 is not a reason to sign in again: credentials rejected.
            await bus.connect(ClosureResponder { failure, job in
                guard failure.category == .unauthenticated, job?.id == "token" else { return .pass }
                var rejected = failure
                rejected.category = .fatal
                rejected.scope = "auth"
                rejected.explain(OperatorText(
                    title: "Credentials rejected",
                    message: "The token endpoint refused the client credentials.",
                    next: "Fix the client secret, then resume auth."
                ))
                return .rewrite(rejected)
            }, to: "auth")
            let job = Job(id: "token", service: "auth", scope: "api.test")
            _ = await bus.submit(job) { throw TestFailure.unauthenticated } completion: { _ in }
            let opened = try #require(try await events.next(.incidentOpened).incident)
            #expect(opened.category == .fatal)
            #expect(opened.state == .paused)
            #expect(opened.text.title == "Credentials rejected")
            #expect(events.count(of: .reauthStarted) == 0)
        }
    }

    @Test func retryEvaluationsWaitForTheBudgetAndAreNeverDropped() async throws {
        var configuration = ErrorBusConfiguration.forTesting
        configuration.retryBudget = .init(successRatio: 0, floorPerMinute: 6, capacity: 1)
        try await withRunningBus(configuration: configuration) { bus, clock, events in
            await bus.connect(ClosureResponder { _, _ in .handle(.retry) }, to: "loader")
            let runs = TimeLog(clock: clock)
            let outcome = OneShotBox<JobOutcome>()
            let job = Job(id: "resources/a", service: "loader", scope: "api.test")
            let submission = await bus.submit(job) {
                // Fails twice, then works.
                if runs.record() <= 2 { throw TestFailure.transient }
            } completion: { outcome.set($0) }
            // First run, one retry from the budget's only token, then the budget is empty.
            guard case .parked(nil) = submission else {
                Issue.record("the retry should wait for the budget, got \(submission)")
                return
            }
            let exhausted = try await events.next(.budgetExhausted)
            #expect(exhausted.delay == .seconds(10))
            #expect(runs.times == [.seconds(0), .seconds(0)])
            #expect(await bus.snapshot().waitingForBudget == 1)

            clock.advance(by: .seconds(10))
            guard case .succeeded = await outcome.value else {
                Issue.record("the retry should have run once the budget refilled")
                return
            }
            #expect(runs.times == [.seconds(0), .seconds(0), .seconds(10)])
        }
    }
}

/// A value set once from any task and awaited by the test.
final class OneShotBox<Value: Sendable>: Sendable {
    private let stream: AsyncStream<Value>
    private let continuation: AsyncStream<Value>.Continuation

    init() {
        (stream, continuation) = AsyncStream.makeStream(bufferingPolicy: .bufferingOldest(1))
    }

    func set(_ value: Value) {
        continuation.yield(value)
    }

    var value: Value? {
        get async {
            var iterator = stream.makeAsyncIterator()
            return await iterator.next()
        }
    }
}
