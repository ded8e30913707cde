import ErrorBus
import ErrorBusStore
import Foundation
import Testing

@testable import ErrorBusDaemon

/// The dispatcher's state machine, alone: slots, claims, the parking-full pause.
struct DispatchStateTests {
    static func jobs(_ count: Int) -> [OutboxJob] {
        (0..<count).map { OutboxJob(id: "job-\($0)", service: "sync", fileName: "f\($0)", path: "/o/f\($0)", size: 1, state: .inFlight, createdAt: Date(), updatedAt: Date()) }
    }

    static func at(_ seconds: Double) -> TimelineInstant { TimelineInstant(offset: .seconds(seconds)) }

    @Test func jobsStartWhileSlotsAreFreeAndEachCountsAsHeldUntilRecorded() {
        var state = DispatchState(concurrency: 2)
        _ = state.claimed(Self.jobs(3))
        let first = state.start(at: Self.at(0))
        #expect(first?.id == "job-0")
        let second = state.start(at: Self.at(0))
        #expect(second?.id == "job-1")
        let third = state.start(at: Self.at(0))
        #expect(third == nil)
        state.firstRunEnded()
        let afterASlotFreed = state.start(at: Self.at(0))
        #expect(afterASlotFreed?.id == "job-2")
        #expect(state.held == 3)
        state.recorded()
        #expect(state.held == 2 && state.running == 2)
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

    @Test func aFullParkingPausesStartsAndClaimsUntilItsInstantAndAsksOnceToBeWoken() {
        var state = DispatchState(concurrency: 2)
        _ = state.claimed(Self.jobs(2))
        state.parkingFull(at: Self.at(10), pause: .seconds(1))
        let resumeAt = state.resumeToSchedule()
        #expect(resumeAt == Self.at(11))
        let resumeAgain = state.resumeToSchedule()
        #expect(resumeAgain == nil)
        let startedDuringThePause = state.start(at: Self.at(10.5))
        #expect(startedDuringThePause == nil)
        let claimedDuringThePause = state.startsClaim()
        #expect(!claimedDuringThePause)
        let startedAfterThePause = state.start(at: Self.at(11))
        #expect(startedAfterThePause?.id == "job-0")
        #expect(state.pausedUntil == nil)
        let first6 = state.resumeToSchedule()
        #expect(first6 == nil)
    }
}
