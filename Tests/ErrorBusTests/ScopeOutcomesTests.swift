import ErrorBus
import Testing

/// What a scope's latest runs say: whether it still serves (an outage or a share of failures), and
/// how unlikely one job's failures are given how its neighbours fare.
@Suite
struct ScopeOutcomesTests {
    static func served(_ count: Int) -> ScopeOutcomes {
        var outcomes = ScopeOutcomes()
        for _ in 0..<count { outcomes.succeeded(fresh: true) }
        return outcomes
    }

    @Test func aScopeThatNeverServedDoesNotServe() {
        var outcomes = ScopeOutcomes()
        outcomes.failed(fresh: true, cause: "http502", job: 1)
        #expect(!outcomes.serves, "a daemon that starts in an outage holds at its first failure")
    }

    @Test func afterManySuccessesAFewJobsFailingInARowAreAnOutage() {
        var outcomes = Self.served(100)
        outcomes.failed(fresh: true, cause: "connectionReset", job: 1)
        outcomes.failed(fresh: true, cause: "connectionReset", job: 2)
        #expect(outcomes.serves, "two failures are chance")
        outcomes.failed(fresh: true, cause: "connectionReset", job: 3)
        #expect(!outcomes.serves, "three jobs in a row after a hundred successes: it serves no more")
    }

    @Test func aScopeFailingHalfItsRunsStillServesThroughLongerStreaks() {
        var outcomes = ScopeOutcomes()
        for number in 0..<64 {
            if number.isMultiple(of: 2) {
                outcomes.succeeded(fresh: true)
            } else {
                outcomes.failed(fresh: true, cause: "http502", job: number)
            }
        }
        for job in 100..<108 { outcomes.failed(fresh: true, cause: "http502", job: job) }
        #expect(outcomes.serves, "eight in a row are chance when half of all runs fail")
        for job in 108..<120 { outcomes.failed(fresh: true, cause: "http502", job: job) }
        #expect(!outcomes.serves, "twenty in a row are not")
    }

    @Test func oneJobFailingAgainAndAgainWeighsLessThanManyJobs() {
        var outcomes = Self.served(100)
        for _ in 0..<3 { outcomes.failed(fresh: false, cause: "http500", job: 7) }
        #expect(outcomes.serves, "one job's three failures in a row are not three jobs'")
        outcomes.failed(fresh: false, cause: "http500", job: 7)
        #expect(!outcomes.serves, "with nothing served in between, a few more are an outage on a quiet host")
    }

    @Test func evidenceCountsOnlyFailuresWhileOthersSucceedAndByHowRareTheirCauseIs() {
        var outcomes = Self.served(99)
        let number = outcomes.failed(fresh: true, cause: "http500", job: 1)
        #expect(number != nil)
        let before = outcomes.successes
        #expect(outcomes.evidence(ofFailureWith: "http500", after: before) == 0, "nothing served since: no evidence")
        outcomes.succeeded(fresh: true)
        let evidence = outcomes.evidence(ofFailureWith: "http500", after: before)
        // One fresh run in a hundred failed so: each failure of the job is about two orders of
        // magnitude of evidence.
        #expect(evidence > 1.6 && evidence < 2.1, "\(evidence)")
        // Another cause is rarer still among the others: more evidence per failure.
        #expect(outcomes.evidence(ofFailureWith: "http404", after: before) > evidence)
    }

    @Test func aSuspectedJobsFailureNoLongerCountsAgainstItsNeighbours() {
        var outcomes = Self.served(40)
        var numbers: [UInt64] = []
        for job in 0..<10 {
            if let number = outcomes.failed(fresh: true, cause: "http500", job: job) { numbers.append(number) }
            outcomes.succeeded(fresh: true)
        }
        let shared = outcomes.failureShare(of: "http500")
        for number in numbers { outcomes.suspect(freshRun: number) }
        let rest = outcomes.failureShare(of: "http500")
        #expect(rest < shared / 5, "ten bad jobs no longer make the other fifty look bad: \(shared) → \(rest)")
        outcomes.clear(freshRun: numbers[0])
        #expect(outcomes.failureShare(of: "http500") > rest, "a suspect that succeeded counts again")
    }
}
