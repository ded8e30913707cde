import ErrorBus
import ErrorBusTesting
import Testing

/// Bad jobs among good ones: a job whose failures are unlikely given how often its scope fails
/// its neighbours at the same time fails for a reason of its own. It is set aside on its own (an
/// incident of its own, holding back nothing), retried on its own back-off and given up as a dead
/// letter with its cause; several such jobs are each told apart on their own evidence; and a real
/// outage (nothing served) is still one incident that holds everything and sets nothing aside,
/// however long it lasts.
@Suite(.timeLimit(.minutes(2)))
struct IsolationTests {
    static var configuration: ErrorBusConfiguration {
        var configuration = PacingTests.configuration
        configuration.isolation = .init(maxAttempts: 3, backoff: .init(base: .seconds(1), factor: 2, cap: .seconds(4)))
        return configuration
    }

    static func poison(_ number: Int) -> Job { Job.sync(10_000 + number) }

    /// The jobs of a host: `good` good ones with `poisons` poison names spread among their first
    /// half.
    static func mixed(good: Int, poisons: Int) -> (jobs: [Job], poison: Set<String>) {
        var jobs = PacingTests.jobs(good)
        let every = max(1, good / 2 / max(1, poisons))
        for number in 0..<poisons {
            jobs.insert(poison(number), at: min(jobs.count, number * (every + 1) + every / 2))
        }
        return (jobs, Set((0..<poisons).map { poison($0).id }))
    }

    /// An API that serves 20 requests a second (`503` beyond), a little less than what arrives,
    /// and refuses one name for ever: the rate's refusals are the scope's (nothing set aside for
    /// them), the bad name is told apart and given up.
    @Test func aNameRefusedForEverAmongPacedNeighboursIsSetAsideAndGivenUpAlone() async throws {
        try await withRunningBus(configuration: Self.configuration) { bus, clock, events in
            await PacingTests.history(bus, clock)
            var jobs = PacingTests.jobs(400)
            jobs.insert(Self.poison(0), at: 20)
            let poison: Set = [Self.poison(0).id]
            let api = ModelAPI(.rate(perSecond: 20), poison: poison, clock: clock, bus: bus)
            let result = await drive(jobs, through: bus, against: api, clock: clock, spacing: .milliseconds(45), limit: clock.now.offset + .seconds(300))

            #expect(result.succeeded == 400, "the good jobs are delivered")
            #expect(result.deadLettered == [Self.poison(0).id], "the bad one alone is given up")
            let incidents = await bus.incidentsSoFar()
            let own = incidents.filter { $0.fingerprint.job != nil }
            #expect(own.map(\.fingerprint.job) == [Self.poison(0).description], "set aside: only the bad one")
            #expect(own.first?.resolution == .givenUp)
            let stopped = try #require(result.outcomes[Self.poison(0).id].flatMap { if case .stopped(let s) = $0 { s } else { nil } })
            #expect(stopped.failure?.text.title == "Given up")
            #expect(stopped.failure?.text.message.contains("failed 3 times on its own") == true, "\(stopped.failure?.text.message ?? "")")
            #expect(stopped.failure?.text.message.contains("A transient failure (http500)") == true, "the cause is kept")
            // The rate's refusals are one incident of the scope's, which set nothing aside.
            #expect(incidents.filter { $0.fingerprint.cause == "http503" }.count <= 1)
            _ = events
        }
    }

    /// A bad job whose runs are long before they fail (a large upload the server cuts half way:
    /// 10 s of its bytes each time) waits, after each failure, at least as long as its run took,
    /// doubled with each failure in a row, however soon its back-off or its neighbours' successes
    /// would have it run again: it never takes more than half the link, then less and less. Its
    /// neighbours go on arrival all the while, and it is set aside and given up as any bad job is.
    @Test func aJobWhoseFailedRunsAreLongWaitsAsLongDoubledBeforeEachRetry() async throws {
        try await withRunningBus(configuration: Self.configuration) { bus, clock, _ in
            await PacingTests.history(bus, clock)
            let runTime = Duration.seconds(10)
            var jobs = PacingTests.jobs(600)
            jobs.insert(Self.poison(0), at: 2)
            let api = ModelAPI(.healthy, poison: [Self.poison(0).id], poisonRunTime: runTime, clock: clock)
            let start = clock.now.offset
            let result = await drive(jobs, through: bus, against: api, clock: clock, spacing: .seconds(1), limit: start + .seconds(900))

            #expect(result.succeeded == 600)
            #expect(result.deadLettered == [Self.poison(0).id])
            let runs = api.tally.poisonRuns
            #expect(runs.count >= 3, "\(runs)")
            for (index, (failed, next)) in zip(runs, runs.dropFirst()).enumerated() {
                let waited = next.lowerBound - failed.upperBound
                let cost = runTime * (1 << min(index, 5))
                #expect(waited >= cost - .milliseconds(10), "retry \(index + 1) after \(waited), its cost \(cost): \(runs)")
            }
        }
    }

    /// Ten names the API refuses among 200 good ones, arriving at 20 a second: each is told
    /// apart on its own evidence (its failures while the good ones were served), not one per later
    /// good job: once the good ones have gone, with no traffic beside them, every bad one is
    /// set aside and given up all the same; none of the good ones is, and none waited behind a
    /// bad one. (A bad name that arrives last, with nothing served after it, has no evidence
    /// against it: it waits, retried, until other work is served.)
    @Test func severalBadNamesAreEachSetAsideOnTheirOwnEvidenceWithNoLaterTraffic() async throws {
        try await withRunningBus(configuration: Self.configuration) { bus, clock, _ in
            await PacingTests.history(bus, clock)
            let (jobs, poison) = Self.mixed(good: 200, poisons: 10)
            let api = ModelAPI(.healthy, poison: poison, clock: clock)
            let start = clock.now.offset
            let result = await drive(jobs, through: bus, against: api, clock: clock, spacing: .milliseconds(50), limit: start + .seconds(300))

            #expect(result.succeeded == 200)
            #expect(Set(result.deadLettered) == poison, "every bad name given up: \(result.deadLettered.sorted())")
            let own = await bus.incidentsSoFar().filter { $0.fingerprint.job != nil }
            #expect(Set(own.compactMap(\.fingerprint.job)) == Set(poison.map { "sync/\($0)" }))
            // The good ones were never held behind the bad ones: each went on arrival.
            for job in jobs where !poison.contains(job.id) {
                let arrival = start + .milliseconds(50) * (jobs.firstIndex(of: job) ?? 0)
                #expect(result.endedAt[job.id].map { $0 - arrival < .milliseconds(100) } == true, "\(job.id) waited")
            }
        }
    }

    /// A job its owner says failed on its own before (a restart) is set aside at its next
    /// failure, without its scope's incident ever taking it for the scope's, and its count goes
    /// on where it was.
    @Test func aJobSetAsideBeforeARestartIsSetAsideAtItsFirstFailureAndCountsOn() async throws {
        try await withRunningBus(configuration: Self.configuration) { bus, clock, _ in
            await PacingTests.history(bus, clock)
            var bad = Self.poison(0)
            bad.failedOnItsOwn = 1
            let api = ModelAPI(.healthy, poison: [bad.id], clock: clock)
            let result = await drive([bad] + PacingTests.jobs(40), through: bus, against: api, clock: clock, spacing: .milliseconds(50), limit: clock.now.offset + .seconds(120))
            #expect(result.succeeded == 40)
            #expect(result.deadLettered == [bad.id])
            // Its first failure went straight to an incident of its own (and a third failure,
            // its second since, gave it up): no incident of the scope's.
            let incidents = await bus.incidentsSoFar()
            #expect(incidents.count == 1)
            #expect(incidents.first?.fingerprint.job == bad.description)
            #expect(api.tally.runs[bad.id] == 2)
        }
    }

    /// Nothing served for ten minutes while files keep arriving: one incident, which holds the
    /// scope and tests it with canaries, and sets no job aside, however often each is a canary;
    /// once the API is back, every job is delivered.
    @Test func anOutageIsOneIncidentThatHoldsAndSetsNothingAsideHoweverLong() async throws {
        try await withRunningBus(configuration: Self.configuration) { bus, clock, _ in
            await PacingTests.history(bus, clock)
            let start = clock.now.offset
            let api = ModelAPI(.down([start..<(start + .seconds(600))]), clock: clock)
            let result = await drive(PacingTests.jobs(60), through: bus, against: api, clock: clock, spacing: .seconds(10), step: .milliseconds(50), limit: start + .seconds(900))
            #expect(result.succeeded == 60)
            let incidents = await bus.incidentsSoFar()
            #expect(incidents.count == 1, "\(incidents.map { "\($0.id) \($0.fingerprint)" })")
            #expect(incidents.first?.fingerprint.job == nil)
            // Held: a canary at a time, paced by the retry budget (at most 10, then 9 a minute),
            // not a retry per job.
            let during = api.tally.arrivedAt.count { $0 >= start && $0 < start + .seconds(600) }
            #expect(during < 10 + 9 * 10 + 10, "\(during) requests during the outage")
        }
    }

    @Test func whenNothingSucceedsEveryFailedJobTakesItsTurnAsTheCanary() async throws {
        var configuration = Self.configuration
        configuration.settleWindow = .zero
        configuration.backoff = .init(base: .seconds(1), factor: 1, cap: .seconds(1))
        try await withRunningBus(configuration: configuration) { bus, clock, events in
            let runs = OrderLog()
            for number in 0..<3 {
                _ = await bus.submit(.sync(number)) {
                    runs.append(number)
                    throw TestFailure.transient
                } completion: { _ in }
            }
            try await events.next(.incidentOpened)
            for _ in 0..<4 {  // four canaries
                clock.advance(by: try #require(try await events.next(.policyScheduled).incident?.next?.delay))
                try await events.next(.canaryFailed)
            }
            // The first run of job 0 (1 and 2 arrived held: nothing was ever served), then
            // canaries: those that merely waited first, then each failed one in turn. One job
            // failing for a reason of its own cannot be every canary.
            #expect(runs.values == [0, 1, 2, 0, 1])
            let snapshot = await bus.snapshot()
            #expect(snapshot.incidents.count == 1, "an outage is one incident: nothing tells a job apart")
            #expect(snapshot.parkedJobs == 3)
        }
    }

    /// A server that answered goes down again while its jobs are being released: the failures
    /// that follow may pace at first (a share of runs failing), but soon say the server serves no
    /// more, and the incident holds it again; no job is taken for failing on its own.
    @Test func whenTheServerGoesDownAgainMidReleaseTheIncidentHoldsAgainAndSetsNothingAside() async throws {
        try await withRunningBus(configuration: Self.configuration) { bus, clock, events in
            await PacingTests.history(bus, clock)
            let start = clock.now.offset
            // Down 20 s, up 2 s, down again 60 s, while a job arrives every 100 ms.
            let second = (start + .seconds(22))..<(start + .seconds(82))
            let api = ModelAPI(.down([start..<(start + .seconds(20)), second]), clock: clock)
            let result = await drive(PacingTests.jobs(900), through: bus, against: api, clock: clock, spacing: .milliseconds(100), step: .milliseconds(20), limit: start + .seconds(300))
            #expect(result.succeeded == 900)
            #expect(result.deadLettered.isEmpty)
            let incidents = await bus.incidentsSoFar()
            #expect(incidents.count == 1, "one incident, within its settle window: \(incidents.map { "\($0.id) \($0.fingerprint)" })")
            #expect(incidents.allSatisfy { $0.fingerprint.job == nil }, "nothing set aside")
            // It held again soon: in the second outage a handful of runs paced before the failures
            // in a row said the server serves no more, then canaries at the retry budget's pace.
            let during = api.tally.arrivedAt.count { second.contains($0) }
            #expect(during < 40, "\(during) requests during the second outage")
        }
    }

    @Test func aServersErrorsForOneServiceDoNotHoldAnothersWorkButItsUnreachabilityDoes() async throws {
        try await withRunningBus { bus, _, events in
            // Uploads meet 503s: the uploads wait, the resources of the same server go on.
            _ = await bus.submit(.sync(0)) { throw TestFailure.transient } completion: { _ in }
            let serverError = try #require(try await events.next(.incidentOpened).incident)
            #expect(serverError.fingerprint.service == "sync")
            let resource = await bus.submit(Job(id: "resources/motd", service: "loader", scope: "api.test")) {} completion: { _ in }
            guard case .completed = resource else {
                Issue.record("a resource should be fetched while uploads meet server errors, got \(resource)")
                return
            }
            let upload = await bus.submit(.sync(1)) {} completion: { _ in }
            guard case .parked(serverError.id) = upload else {
                Issue.record("another upload should wait, got \(upload)")
                return
            }
            // The resources' server refuses connections: every job sent there waits, uploads too.
            _ = await bus.submit(Job(id: "resources/motd", service: "loader", scope: "cdn.test")) {
                throw TestFailure.unreachable
            } completion: { _ in }
            let unreachable = try #require(try await events.next(.incidentOpened).incident)
            #expect(unreachable.fingerprint.service == nil)
            let uploadToCDN = await bus.submit(.sync(2, scope: "cdn.test")) {} completion: { _ in }
            guard case .parked(unreachable.id) = uploadToCDN else {
                Issue.record("an upload to an unreachable server should wait, got \(uploadToCDN)")
                return
            }
        }
    }
}
