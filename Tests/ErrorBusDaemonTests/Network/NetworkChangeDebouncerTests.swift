import ErrorBus
import Testing

@testable import ErrorBusDaemon

/// The debouncing state machine, instant by instant.
@Suite(.timeLimit(.minutes(1)))
struct NetworkChangeDebouncerTests {
    static func at(_ milliseconds: Int64) -> TimelineInstant {
        TimelineInstant(offset: .milliseconds(milliseconds))
    }

    @Test func aBurstEndsAfterItsQuietPeriod() {
        var debouncer = NetworkChangeDebouncer(quiet: .milliseconds(500), maximumDelay: .seconds(5))
        #expect(debouncer.deadline == nil)
        debouncer.record(NetworkChange(links: 1), at: Self.at(0))
        debouncer.record(NetworkChange(addresses: 2), at: Self.at(100))
        debouncer.record(NetworkChange(routes: 3), at: Self.at(300))
        #expect(debouncer.deadline == Self.at(800))
        #expect(debouncer.takeFinished(at: Self.at(799)) == nil)
        #expect(debouncer.takeFinished(at: Self.at(800)) == NetworkChange(links: 1, addresses: 2, routes: 3))
        #expect(debouncer.deadline == nil)
        #expect(debouncer.takeFinished(at: Self.at(10_000)) == nil)
    }

    @Test func aBurstThatNeverPausesEndsAtTheMaximumDelay() {
        var debouncer = NetworkChangeDebouncer(quiet: .milliseconds(500), maximumDelay: .seconds(2))
        for millisecond in stride(from: Int64(0), through: 1_900, by: 100) {
            debouncer.record(NetworkChange(links: 1), at: Self.at(millisecond))
        }
        #expect(debouncer.deadline == Self.at(2_000))
        #expect(debouncer.takeFinished(at: Self.at(2_000))?.links == 20)
    }

    @Test func notificationsAfterABurstStartTheNext() {
        var debouncer = NetworkChangeDebouncer(quiet: .milliseconds(500), maximumDelay: .seconds(5))
        debouncer.record(NetworkChange(links: 1), at: Self.at(0))
        #expect(debouncer.takeFinished(at: Self.at(500))?.links == 1)
        debouncer.record(NetworkChange(routes: 1, notificationsLost: true), at: Self.at(900))
        #expect(debouncer.deadline == Self.at(1_400))
        #expect(debouncer.takeFinished(at: Self.at(1_400)) == NetworkChange(routes: 1, notificationsLost: true))
    }

    @Test func theMaximumDelayIsNeverShorterThanTheQuietPeriod() {
        var debouncer = NetworkChangeDebouncer(quiet: .seconds(1), maximumDelay: .milliseconds(10))
        debouncer.record(NetworkChange(links: 1), at: Self.at(0))
        #expect(debouncer.deadline == Self.at(1_000))
    }
}
