@testable import ErrorBus
import Testing

/// Which refusals cut a scope's rate: a refusal that no queue explains (a rate, a quota) does; a
/// refusal while answers come slow is a queue overflowing (a few workers behind a short queue),
/// which the concurrency limit answers, and the rate stays off. Cut there too, a fleet of 100
/// against 20 workers and a queue of 100 drained in 1.9 times the ideal, against 1.1 without the
/// rate (`scripts/bench-fleet --law concurrency`).
@Suite
struct AdmissionRateTests {
    static func at(_ milliseconds: Int) -> TimelineInstant { TimelineInstant(offset: .milliseconds(milliseconds)) }

    /// Runs `count` jobs one after another from `start`, each answered `latency` later with
    /// success; returns when the last ended.
    static func succeed(_ admission: inout Admission, _ count: Int, latency: Int, from start: Int) -> Int {
        var now = start
        for number in 0..<count {
            let job = Job.sync(number)
            #expect(admission.enter(job, at: Self.at(now)).grant == .granted)
            now += latency
            _ = admission.release(job, .init(outcome: .success(latency: .milliseconds(latency)), startedAt: Self.at(now - latency), fresh: true, counts: true, teaches: true), at: Self.at(now))
        }
        return now
    }

    static func refuse(_ admission: inout Admission, at now: Int) {
        let job = Job.sync(1_000)
        #expect(admission.enter(job, at: Self.at(now)).grant == .granted)
        _ = admission.release(job, .init(outcome: .overloaded, startedAt: Self.at(now), fresh: true, counts: true, teaches: true), at: Self.at(now + 1))
    }

    @Test func aRefusalThatNoQueueExplainsCutsTheRate() {
        var admission = Admission(concurrency: .init(), pacing: .init())
        let now = Self.succeed(&admission, 20, latency: 5, from: 0)
        Self.refuse(&admission, at: now)
        #expect(admission.limits(at: Self.at(now + 2)).first?.rate != nil)
    }

    @Test func aRefusalWhileAnswersQueueLeavesTheRateAlone() {
        var admission = Admission(concurrency: .init(), pacing: .init())
        var now = Self.succeed(&admission, 20, latency: 50, from: 0)
        // The queue in front of the scope fills: answers come six times as slow.
        now = Self.succeed(&admission, 8, latency: 300, from: now)
        Self.refuse(&admission, at: now)
        #expect(admission.limits(at: Self.at(now + 2)).first?.rate == nil)
    }
}
