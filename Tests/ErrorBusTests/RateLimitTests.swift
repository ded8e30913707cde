import ErrorBus
import ErrorBusTesting
import Testing

@Suite(.timeLimit(.minutes(1)))
struct RateLimitTests {
    @Test func aRetryAfterOfSevenSecondsRunsNoCanaryBeforeSevenSeconds() async throws {
        try await withRunningBus { bus, clock, events in
            let runs = TimeLog(clock: clock)
            for number in 0..<5 {
                _ = await bus.submit(.sync(number)) {
                    if runs.record() == 1 { throw TestFailure(.rateLimited(retryAfter: .seconds(7)), cause: "http429") }
                } completion: { _ in }
            }
            let scheduled = try #require(try await events.next(.policyScheduled).incident?.next)
            #expect(scheduled.step == .canary)
            #expect(scheduled.delay >= .seconds(7))
            #expect(scheduled.delay <= .seconds(10.5))  // the jitter adds up to half

            await clock.sleepers(atLeast: 1)
            clock.advance(to: .seconds(6.999))
            #expect(try #require(clock.nextDeadline) >= .seconds(7))
            #expect(runs.times == [.seconds(0)])

            clock.advanceToNextDeadline()
            let resolved = try #require(try await events.next(.incidentResolved).incident)
            #expect(resolved.released == 5)
            let canary = try #require(runs.times.dropFirst().first)
            #expect(canary >= .seconds(7))
        }
    }

    @Test func aLongerHintFromAJoiningFailurePushesTheCanaryBackAndAShorterOneDoesNot() async throws {
        var configuration = ErrorBusConfiguration.forTesting
        configuration.rateLimit.jitter = 0
        try await withRunningBus(configuration: configuration) { bus, clock, events in
            @Sendable func limited(_ seconds: Int64) -> TestFailure {
                TestFailure(.rateLimited(retryAfter: .seconds(seconds)), cause: "http429")
            }
            let runs = TimeLog(clock: clock)
            _ = await bus.submit(.sync(0)) {
                if runs.record() == 1 { throw limited(5) }
            } completion: { _ in }
            #expect(try await events.next(.policyScheduled).incident?.next?.delay == .seconds(5))
            await bus.report(Failure(limited(2), job: .sync(1)))
            await bus.report(Failure(limited(20), job: .sync(2)))
            #expect(await bus.snapshot().incidents.first?.next?.delay == .seconds(20))

            // The timer armed for 5 s wakes, sees the later deadline and sleeps again.
            await clock.sleepers(atLeast: 1)
            clock.advance(to: .seconds(5))
            await clock.sleepers(atLeast: 1)
            #expect(clock.nextDeadline == .seconds(20))
            clock.advance(to: .seconds(19.999))
            #expect(runs.times == [.seconds(0)])

            clock.advanceToNextDeadline()
            try await events.next(.incidentResolved)
            #expect(runs.times == [.seconds(0), .seconds(20)])
            #expect(events.count(of: .policyScheduled) == 1)
        }
    }
}

/// Records when an operation ran, on the manual clock.
final class TimeLog: Sendable {
    private let clock: ManualClock
    private let storage = Mutex<[ManualClock.Instant]>([])

    init(clock: ManualClock) {
        self.clock = clock
    }

    /// Records now; returns how many runs there have been.
    @discardableResult
    func record() -> Int {
        let now = clock.now
        return storage.withLock { times in
            times.append(now)
            return times.count
        }
    }

    var times: [ManualClock.Instant] { storage.withLock { $0 } }
}

import Synchronization
