@testable import ErrorBus
import ErrorBusTesting
import Foundation
import Testing

/// An incident's life as a value, without a bus: every change of its state goes through
/// `enter`, which starts a new schedule (or keeps the one under way), and each state carries its
/// own data.
@Suite struct IncidentRecordTests {
    let start = Date(timeIntervalSince1970: 1_700_000_000)

    func at(_ seconds: Int) -> TimelineInstant { TimelineInstant(offset: .seconds(seconds)) }

    func makeIncident() -> IncidentRecord {
        IncidentRecord(
            id: IncidentID(rawValue: 1),
            failure: Failure(TestFailure.transient, job: .sync(0)),
            policy: .transient(TransientPolicy(.init())),
            at: at(0),
            date: start
        )
    }

    func command(_ number: Int) -> Command {
        Command(serial: UInt64(number), job: .sync(number), submittedAt: at(0), operation: {}, completion: { _ in })
    }

    @Test func everyChangeOfStateStartsANewScheduleUnlessItKeepsTheOneUnderWay() throws {
        let incident = makeIncident()
        let key = try #require(incident.holdKey)
        #expect(incident.state == .opening)
        #expect(incident.enter(.waiting, next: (.canary, at(5))) == .hold(key))
        let scheduled = incident.generation
        #expect(incident.next?.step == .canary && incident.next?.at == at(5))
        #expect(incident.enter(.canary) == nil)
        #expect(incident.generation == scheduled &+ 1 && incident.next == nil)

        #expect(incident.enter(.releasing(running: true)) == .letGo(key))
        let releasing = incident.generation
        incident.enter(.pacing(running: incident.isReleasing), keepingSchedule: true)
        #expect(incident.generation == releasing && incident.isReleasing && incident.state == .pacing)
    }

    @Test func aTimerOfAnOlderScheduleIsStaleAndOneOfAPostponedStepWaitsForTheRest() {
        let incident = makeIncident()
        incident.enter(.waiting, next: (.canary, at(5)))
        let armed = incident.generation
        // A later deadline for the step it waits for only moves the deadline: no new timer.
        #expect(incident.postpone(.canary, to: at(8)))
        #expect(incident.generation == armed && incident.next?.at == at(8))
        // An earlier one, or another step, needs a new schedule.
        #expect(!incident.postpone(.canary, to: at(7)) && !incident.postpone(.probe, to: at(9)))
        #expect(incident.timerFired(generation: armed, at: at(5)) == .rearm(at(8)))
        #expect(incident.timerFired(generation: armed, at: at(8)) == .take(.canary))
        #expect(incident.timerFired(generation: armed &- 1, at: at(8)) == .stale)
        incident.enter(.canary)
        #expect(incident.timerFired(generation: armed, at: at(8)) == .stale)
    }

    @Test func aReleaseUnderWayBelongsToReleasingAndPacingAlone() {
        let incident = makeIncident()
        incident.enter(.releasing(running: false))
        incident.isReleasing = true
        #expect(incident.isReleasing)
        incident.enter(.waiting)
        #expect(!incident.isReleasing)
        // Outside releasing and pacing, there is no release to mark.
        incident.isReleasing = true
        #expect(!incident.isReleasing && incident.phase == .waiting)
    }

    @Test func oneReleaseRunsAtATimeAndOneTimerWaitsForTheSoonestJobDue() {
        let incident = makeIncident()
        incident.enter(.waiting)
        #expect(!incident.startsRelease())
        incident.enter(.pacing(running: false))
        #expect(incident.startsRelease() && incident.isReleasing)
        #expect(!incident.startsRelease())

        #expect(incident.delayedWake() == nil)
        incident.append(command(1), failed: true, due: at(30))
        #expect(incident.delayedWake() == at(30))
        // Armed as soon already: no second timer; a sooner job needs one.
        incident.append(command(2), failed: true, due: at(40))
        #expect(incident.delayedWake() == nil)
        incident.append(command(3), failed: true, due: at(20))
        #expect(incident.delayedWake() == at(20))
    }

    @Test func heldItsJobsWaitingOutABackOffWaitNoMore() {
        let incident = makeIncident()
        incident.enter(.pacing(running: false))
        incident.append(command(1), failed: true, due: at(30))
        #expect(!incident.hasReady && incident.nextDue == at(30))
        incident.enter(.waiting)
        #expect(incident.hasReady && incident.nextDue == nil && incident.first?.serial == 1)
    }

    @Test func aSettledIncidentResolvesAsOfWhenItsCauseWentAway() {
        let incident = makeIncident()
        incident.enter(.settling(since: at(10)), next: (.close, at(70)))
        #expect(incident.recovered == at(10) && incident.state == .settling && !incident.state.holdsScope)
        incident.enter(.resolved(.recovered, at: at(10), date: start.addingTimeInterval(10)))
        #expect(incident.recovered == nil)
        let snapshot = incident.snapshot(at: at(70))
        #expect(snapshot.state == .resolved && snapshot.resolution == .recovered && snapshot.next == nil)
        #expect(snapshot.age == .seconds(10) && snapshot.openedAt == start && snapshot.closedAt == start.addingTimeInterval(10))
    }

    @Test func wallClockTimesComeFromTheInjectedClock() {
        let clock = ManualClock()
        let timeline = Timeline(clock, startDate: start)
        clock.advance(by: .milliseconds(90_500))
        #expect(timeline.date(of: timeline.now()) == start.addingTimeInterval(90.5))
    }
}
