import ErrorBus
import ErrorBusStore
import Testing

@testable import ErrorBusDaemon

/// The retention's schedule and the backlog's room, alone: pure values on the service's clock.
struct RetentionScheduleTests {
    static func at(_ seconds: Double) -> TimelineInstant { TimelineInstant(offset: .seconds(seconds)) }

    @Test func everythingIsDueAtTheFirstWakeUpThenEachOnItsInterval() {
        var schedule = RetentionSchedule()
        let step1 = schedule.due(at: Self.at(0))
        #expect(step1 == .init(deadLetters: true, delivered: true))
        let step2 = schedule.due(at: Self.at(59))
        #expect(step2 == .init())
        let step3 = schedule.due(at: Self.at(60))
        #expect(step3 == .init(deadLetters: true, delivered: false))
        let step4 = schedule.due(at: Self.at(100))
        #expect(step4 == .init())
        // A wake-up long after the interval is one pass, scheduled from then.
        let step5 = schedule.due(at: Self.at(3_600))
        #expect(step5 == .init(deadLetters: true, delivered: true))
        let step6 = schedule.due(at: Self.at(3_650))
        #expect(step6 == .init())
    }

    @Test func aDeadLetterOverTheCountIsPrunedAtTheNextWakeUp() {
        var schedule = RetentionSchedule()
        _ = schedule.due(at: Self.at(0))
        schedule.wentOverCount()
        let step7 = schedule.due(at: Self.at(1))
        #expect(step7 == .init(deadLetters: true, delivered: false))
        // And the periodic pass counts from there.
        let step8 = schedule.due(at: Self.at(60))
        #expect(step8 == .init())
        let step9 = schedule.due(at: Self.at(61))
        #expect(step9 == .init(deadLetters: true, delivered: false))
    }

    @Test func whatIsGivenUpIsToldAtMostOnceAMinuteAndNothingIsLeftUntold() {
        var schedule = RetentionSchedule()
        let step10 = schedule.gaveUp(.init(), at: Self.at(0))
        #expect(step10 == nil)
        let step11 = schedule.gaveUp(.init(overCount: 3), at: Self.at(1))
        #expect(step11 == .init(overCount: 3))
        // Within the minute: kept for later.
        let step12 = schedule.gaveUp(.init(overCount: 2), at: Self.at(30))
        #expect(step12 == nil)
        let step13 = schedule.gaveUp(.init(tooOld: 4), at: Self.at(45))
        #expect(step13 == nil)
        let step14 = schedule.gaveUp(.init(), at: Self.at(61))
        #expect(step14 == .init(overCount: 2, tooOld: 4))
        let step15 = schedule.gaveUp(.init(), at: Self.at(200))
        #expect(step15 == nil)
    }

    @Test func theRoomOfABacklogFollowsWhatIsTakenAndSetAside() {
        let limits = DaemonConfiguration.Sync.Backlog(maxBytes: 1_000, maxFiles: 3, overflow: .dropOldest)
        var room = BacklogRoom(JobStore.Backlog(jobs: 2, bytes: 600, oldest: nil), limits)
        #expect(!room.isFull && !room.isOver)
        // Too large for the bytes left: nothing taken.
        let step16 = room.take(500)
        #expect(!step16)
        let step17 = room.take(400)
        #expect(step17)
        #expect(room.isFull && !room.isOver)
        let step18 = room.take(1)
        #expect(!step18)
        // Over by one file and 200 bytes: two of 100 set aside make room.
        var over = BacklogRoom(JobStore.Backlog(jobs: 4, bytes: 1_200, oldest: nil), limits)
        #expect(over.isOver)
        over.free(100)
        #expect(over.isOver)
        over.free(100)
        #expect(!over.isOver && over.isFull)
        // No limit, no bound.
        var unbounded = BacklogRoom(JobStore.Backlog(jobs: 1_000_000, bytes: 1 << 40, oldest: nil), .init())
        let step19 = unbounded.take(1 << 30)
        #expect(step19 && !unbounded.isOver)
        unbounded.free(1)
        #expect(!unbounded.isFull)
    }
}
