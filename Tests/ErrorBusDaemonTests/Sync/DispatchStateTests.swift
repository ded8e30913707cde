import ErrorBus
import ErrorBusStore
import Foundation
import Testing

@testable import ErrorBusDaemon

/// The dispatcher's state machine, alone: slots, claims, the wake-up for paced jobs.
struct DispatchStateTests {
    static func jobs(_ count: Int) -> [OutboxJob] {
        (0..<count).map { OutboxJob(id: "job-\($0)", service: "sync", fileName: "f\($0)", path: "/o/f\($0)", size: 1, state: .inFlight, createdAt: Date(), updatedAt: Date()) }
    }

    static func at(_ seconds: Double) -> TimelineInstant { TimelineInstant(offset: .seconds(seconds)) }

    @Test func jobsStartWhileSlotsAreFree() {
        var state = DispatchState(concurrency: 2)
        _ = state.claimed(Self.jobs(3))
        #expect(state.start()?.id == "job-0")
        #expect(state.start()?.id == "job-1")
        #expect(state.start() == nil)
        state.uploadEnded()
        #expect(state.start()?.id == "job-2")
        #expect(state.running == 2)
    }

    @Test func oneClaimAtATimeAndAWakeDuringItAsksForAnother() {
        var state = DispatchState(concurrency: 2)
        let claims = state.startsClaim()
        #expect(claims)
        let claimsDuringTheClaim = state.startsClaim()
        #expect(!claimsDuringTheClaim)
        #expect(state.claim == .claimingAgain)
        // Nothing claimed, but a wake-up came meanwhile: claim again.
        let wakes = state.claimed([])
        #expect(wakes)
        #expect(state.claim == .idle)
        let claimsAgain = state.startsClaim()
        #expect(claimsAgain)
        let wakesWithNothing = state.claimed([])
        #expect(!wakesWithNothing)
        // Enough at hand (twice the concurrency): no claim.
        _ = state.claimed(Self.jobs(4))
        let claimsWithEnoughAtHand = state.startsClaim()
        #expect(!claimsWithEnoughAtHand)
        #expect(state.claimLimit == 8)
    }

    @Test func pacedJobsWakeTheDispatcherForTheSoonest() {
        var state = DispatchState(concurrency: 2)
        #expect(state.retryWake(at: Self.at(0)) == nil)
        state.retry(at: Self.at(5))
        #expect(state.retryWake(at: Self.at(0)) == Self.at(5))
        // Armed for 5: a later one waits for it, a sooner one is armed too.
        state.retry(at: Self.at(8))
        #expect(state.retryWake(at: Self.at(1)) == nil)
        state.retry(at: Self.at(3))
        #expect(state.retryWake(at: Self.at(1)) == Self.at(3))
        // Each wake-up arms the next (the one armed for 5 before may wake it twice: harmless).
        #expect(state.retryWake(at: Self.at(3)) == Self.at(5))
        #expect(state.retryWake(at: Self.at(5)) == Self.at(8))
        #expect(state.retryWake(at: Self.at(8)) == nil)
    }
}
