import ErrorBusTesting
import Foundation
import NIOCore
import NIOHTTP1
import Testing

@testable import Sandbox

/// The API's capacity: slots, a queue, a rate, a ramp-up; beyond them, 503 with Retry-After.
@Suite(.timeLimit(.minutes(1)))
struct CapacityTests {
    private func limiter(_ spec: CapacitySpec, at now: Duration = .zero) throws -> CapacityLimiter {
        let limiter = CapacityLimiter()
        limiter.set(try spec.capacity(setAt: now), at: now)
        return limiter
    }

    @Test func requestsBeyondTheSlotsWaitInTheQueueAndBeyondItAreShed() async throws {
        let limiter = try limiter(CapacitySpec(concurrency: 2, queue: 1, retryAfter: 3))
        #expect(await limiter.admit(.items, at: .zero) == .admitted(nil))
        #expect(await limiter.admit(.items, at: .zero) == .admitted(nil))
        let waiter = Task { await limiter.admit(.items, at: .zero) }
        while limiter.current.counts.waiting < 1 { await Task.yield() }
        #expect(await limiter.admit(.items, at: .zero) == .shed(retryAfter: 3))
        // Other routes are not limited.
        #expect(await limiter.admit(.token, at: .zero) == .unlimited)

        limiter.release(at: .zero)
        #expect(await waiter.value == .admitted(nil))
        #expect(limiter.current.counts == .init(inService: 2, waiting: 0, peakInService: 2, admitted: 3, shed: 1))
    }

    @Test func aRateAdmitsOneSecondsWorthAtOnceThenAsTokensComeBack() async throws {
        let limiter = try limiter(CapacitySpec(perSecond: 5))
        for _ in 0..<5 { #expect(await limiter.admit(.items, at: .zero) == .admitted(nil)) }
        #expect(await limiter.admit(.items, at: .zero) == .shed(retryAfter: 1))
        #expect(await limiter.admit(.items, at: .milliseconds(100)) == .shed(retryAfter: 1))
        #expect(await limiter.admit(.items, at: .milliseconds(200)) == .admitted(nil))
    }

    /// A quota per window, as APIs announce it: every answer tells what remains until the reset;
    /// beyond the quota, refused until the window ends; the next window starts afresh.
    @Test func aQuotaPerWindowIsToldWithEveryAnswerAndRefusedBeyond() async throws {
        let limiter = try limiter(CapacitySpec(quota: .init(limit: 3, window: 10)), at: .seconds(100))
        for remaining in [2, 1, 0] {
            #expect(await limiter.admit(.items, at: .seconds(104)) == .admitted(.init(limit: 3, remaining: remaining, reset: .seconds(6), window: .seconds(10))))
            limiter.release(at: .seconds(104))
        }
        #expect(await limiter.admit(.items, at: .seconds(105)) == .overQuota(.init(limit: 3, remaining: 0, reset: .seconds(5), window: .seconds(10))))
        #expect(await limiter.admit(.items, at: .seconds(110)) == .admitted(.init(limit: 3, remaining: 2, reset: .seconds(10), window: .seconds(10))))
        #expect(limiter.current.counts.shed == 1)
    }

    @Test func aRampUpStartsLowAfterItsDelayAndClimbsToTheFullCapacity() throws {
        let spec = CapacitySpec(concurrency: 10, perSecond: 100, rampUp: .init(after: 10, from: 0.2, seconds: 10))
        let capacity = try spec.capacity(setAt: .seconds(5))
        #expect(capacity.concurrency(at: .seconds(14)) == 10)
        #expect(capacity.concurrency(at: .seconds(15)) == 2)
        #expect(capacity.concurrency(at: .seconds(20)) == 6)
        #expect(capacity.concurrency(at: .seconds(25)) == 10)
        #expect(capacity.perSecond(at: .seconds(15)) == 20)
    }

    @Test(arguments: [
        #"{"concurrency":0}"#, #"{"perSecond":-1}"#, #"{"queue":-2}"#, #"{"routes":["login"]}"#,
        #"{"rampUp":{"from":0,"seconds":5}}"#, #"{"serviceMs":1e9}"#, #"{"concurrency":"eight"}"#,
        #"{"quota":{"limit":0,"window":60}}"#, #"{"quota":{"limit":10,"window":0}}"#,
    ])
    func aCapacityThatCannotBeAppliedIsRefusedWithItsReason(json: String) {
        #expect(throws: CapacityError.self) { try CapacitySpec(json: json) }
    }

    @Test func overCapacityTheAPIAnswers503WithRetryAfterAndCountsIt() async throws {
        let manual = ManualClock()
        try await RunningSandbox.with(clock: SandboxClock(manual)) { sandbox in
            let set = try await sandbox.send(
                .PUT, "/admin/capacity", headers: [("Content-Type", "application/json")],
                body: ByteBuffer(string: #"{"concurrency":1,"serviceMs":500,"retryAfter":2,"routes":["healthz"]}"#)
            )
            #expect(set.status == 200, "\(set.text)")
            // The first request holds the only slot for 500 ms of the sandbox's clock.
            async let first = sandbox.send(.GET, "/healthz")
            await manual.sleepers(atLeast: 1)
            let shed = try await sandbox.send(.GET, "/healthz")
            #expect(shed.status == 503)
            #expect(shed.headers["Retry-After"] == ["2"])
            #expect(shed.headers["Content-Type"].first?.hasPrefix("application/problem+json") == true)
            manual.advance(by: .milliseconds(500))
            #expect(try await first.status == 204)

            let stats = try await sandbox.stats()
            #expect(stats.requests.byRoute["healthz"] == ["204": 1, "503": 1])
            #expect(stats.capacity == .init(inService: 0, waiting: 0, peakInService: 1, admitted: 1, shed: 1))
            let bad = try await sandbox.send(.PUT, "/admin/capacity", body: ByteBuffer(string: #"{"concurrency":0}"#))
            #expect(bad.status == 400 && bad.text.contains("concurrency must be at least 1"))
            #expect(try await sandbox.send(.DELETE, "/admin/capacity").status == 204)
            #expect(try await sandbox.send(.GET, "/healthz").status == 204)
        }
    }
}
