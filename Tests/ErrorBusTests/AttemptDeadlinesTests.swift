@testable import ErrorBus
import Synchronization
import Testing

/// The runs' deadlines as a plain value: one timer for them all.
@Suite struct AttemptDeadlinesTests {
    static func at(_ seconds: Int) -> TimelineInstant { TimelineInstant(offset: .seconds(seconds)) }

    @Test func oneTimerServesEveryRunAndExpiresOnlyWhatIsDue() {
        let deadlines = AttemptDeadlines()
        let expired = Mutex<[Int]>([])
        func add(_ second: Int) -> (AttemptDeadlines.Token, TimelineInstant?) {
            deadlines.add(Self.at(second)) { expired.withLock { $0.append(second) } }
        }
        let (_, arm10) = add(10)
        let (eleven, arm11) = add(11)
        let (_, arm12) = add(12)
        #expect(arm10 == Self.at(10))
        #expect(arm11 == nil && arm12 == nil, "later deadlines wait for the timer armed")
        // A run that ends in time is forgotten.
        deadlines.remove(eleven)
        #expect(deadlines.fired(armedFor: Self.at(10), at: Self.at(10)) == Self.at(12))
        #expect(expired.withLock { $0 } == [10])
        // An earlier deadline arms a timer of its own; the one it overtook does nothing.
        let (_, arm5) = add(5)
        #expect(arm5 == Self.at(5))
        #expect(deadlines.fired(armedFor: Self.at(12), at: Self.at(12)) == nil)
        #expect(expired.withLock { $0 } == [10])
        #expect(deadlines.fired(armedFor: Self.at(5), at: Self.at(12)) == nil)
        #expect(expired.withLock { $0 }.sorted() == [5, 10, 12])
        #expect(deadlines.count == 0)
    }

    @Test func theFirstOfARunAndItsDeadlineToEndDecides() {
        let inTime = AttemptRace()
        #expect(inTime.finish())
        #expect(!inTime.expire(), "a run that ended is not cancelled")
        #expect(!inTime.expired)
        let late = AttemptRace()
        #expect(late.expire())
        #expect(!late.finish(), "a run that ends after its deadline is timed out")
        #expect(late.expired)
    }
}
