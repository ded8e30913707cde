@testable import ErrorBus
import Testing

/// Which run a cancellation belongs to, as a plain value.
@Suite struct RunningJobsTests {
    let job = Job(id: "poison.bin", service: "sync", scope: "api")

    /// A failed run parks its job, and its incident may take it as canary before that run has
    /// finished (a loaded host, a canary due at once): an operator's cancel then belongs to the
    /// canary. Were runs told apart by their command, the ending run would take the
    /// cancellation and stop the job while its canary went on, to be retried for ever.
    @Test func aCancelBelongsToTheRunUnderWayNotToAnEarlierRunOfTheSameJobStillEnding() {
        var running = RunningJobs()
        let failed = running.start(job)
        let canary = running.start(job)
        let asked = running.cancel(service: "sync", id: "poison.bin")
        let failedStops = running.finish(failed)
        let canaryStops = running.finish(canary)
        let askedAgain = running.cancel(service: "sync", id: "poison.bin")
        #expect(asked)
        #expect(!failedStops, "the run that ended first was not asked to stop")
        #expect(canaryStops, "the canary was")
        #expect(!askedAgain, "nothing runs any more")
    }

    @Test func aRunNotCancelledEndsAsItWasAndAnotherJobIsUntouched() {
        var running = RunningJobs()
        let other = running.start(Job(id: "good.txt", service: "sync", scope: "api"))
        let run = running.start(job)
        let asked = running.cancel(service: "sync", id: "poison.bin")
        let otherStops = running.finish(other)
        let runStops = running.finish(run)
        let loader = running.cancel(service: "loader", id: "poison.bin")
        #expect(asked)
        #expect(!otherStops)
        #expect(runStops)
        #expect(!loader, "jobs are told apart by service too")
    }
}
