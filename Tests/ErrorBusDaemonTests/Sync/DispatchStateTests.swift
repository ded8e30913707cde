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

    @Test func whileHeldBackTheBusTakesUpToItsShareAndTheRestGoBackToTheStore() {
        var state = DispatchState(concurrency: 2, parkedInMemory: 3)
        _ = state.claimed(Self.jobs(6))
        // Held back: jobs still go to the bus (which parks them) until it holds three.
        #expect(state.heldBack(true).isEmpty)
        var started: [String] = []
        while let job = state.start(at: Self.at(0)) {
            started.append(job.id)
            state.firstRunEnded()
            state.handedToBus()
        }
        #expect(started == ["job-0", "job-1", "job-2"])
        #expect(state.withTheBus == 3)
        // The rest go back to the store's queue, and nothing more is claimed.
        #expect(state.heldBack(true).map(\.id) == ["job-3", "job-4", "job-5"])
        #expect(state.pending.isEmpty)
        let claimsWhileHeld = state.startsClaim()
        #expect(!claimsWhileHeld)
        // A starting job counts as one the bus is about to hold.
        state.backFromBus()
        _ = state.claimed(Self.jobs(1))
        #expect(state.heldBack(true).isEmpty)
        #expect(state.start(at: Self.at(0))?.id == "job-0")
        #expect(state.start(at: Self.at(0)) == nil)
        // The incident ends: claims and starts go on.
        #expect(state.heldBack(false).isEmpty)
        let claims = state.startsClaim()
        #expect(claims)
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
