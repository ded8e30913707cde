import ErrorBus
import ErrorBusTesting
import Testing

/// One bad job among good ones: a job that fails while others of its service and scope succeed
/// fails for a reason of its own. It must not be every canary, must not hold the others, and must
/// end as a dead letter with its cause after its own attempts; a real outage (nothing succeeds)
/// is still one incident holding everything.
@Suite(.timeLimit(.minutes(1)))
struct IsolationTests {
    static let poison = Job(id: "poison", service: "sync", scope: "api.test", realm: "api", name: "poison.bin")

    static var configuration: ErrorBusConfiguration {
        var configuration = ErrorBusConfiguration.forTesting
        configuration.isolation = .init(maxAttempts: 3, backoff: .init(base: .seconds(10), factor: 2, cap: .seconds(60)))
        return configuration
    }

    @Test func aJobFailingWhileOthersSucceedLeavesItsIncidentAndIsGivenUpAlone() async throws {
        try await withRunningBus(configuration: Self.configuration) { bus, clock, events in
            let outcomes = OutcomeLog()
            let poisonRuns = Counter()
            let given = OneShotBox<JobStopped>()
            _ = await bus.submit(Self.poison) {
                // A request that never gets an answer times out one way or another.
                throw TestFailure(.transient, cause: poisonRuns.increment().isMultiple(of: 2) ? "readTimeout" : "deadlineExceeded")
            } completion: { outcome in
                if case .stopped(let stopped) = outcome { given.set(stopped) }
            }
            let outage = try #require(try await events.next(.incidentOpened).incident)
            // Good jobs that arrive after it wait behind its incident.
            for number in 1...5 {
                let submission = await bus.submit(.sync(number)) {} completion: { outcomes.record(number, $0) }
                guard case .parked(outage.id) = submission else {
                    Issue.record("job \(number) should wait behind incident \(outage.id), got \(submission)")
                    return
                }
            }

            // The canary is a job that merely waited, not the one that failed: it succeeds, and
            // the others are released; the bad one, released last, fails again and leaves.
            clock.advance(by: try #require(try await events.next(.policyScheduled).incident?.next?.delay))
            let resolved = try #require(try await events.next(.incidentResolved).incident)
            #expect(resolved.id == outage.id)
            #expect(resolved.resolution == .recovered)
            #expect(poisonRuns.count == 2, "the bad job was tried once more, released with the others, not as the canary")
            var delivered: [String] = []
            for _ in 1...5 { delivered.append(await outcomes.next() ?? "") }
            #expect(delivered.sorted() == (1...5).map { "\($0) succeeded" })

            // Its own incident: about it alone, holding nothing back.
            let own = try #require(await bus.snapshot().incidents.first)
            #expect(own.fingerprint.job == Self.poison.description)
            #expect(own.text.title == "Fails on its own")
            #expect(own.text.message.hasPrefix("poison.bin fails while other sync jobs at api.test succeed"), "\(own.text.message)")
            #expect(own.parked == 1)
            let next = await bus.submit(.sync(6)) {} completion: { _ in }
            guard case .completed = next else {
                Issue.record("a new job should run at once beside the bad one, got \(next)")
                return
            }
            #expect(await bus.heldJobs() == [HeldJob(job: Self.poison, incident: own.id, hasFailed: true)])

            // Retried on the isolation's back-off, and given up after its third failure on its own.
            let first = try #require(own.next?.delay)
            #expect(first <= .seconds(10))
            clock.advance(by: first)
            try await events.next(.canaryFailed)
            clock.advance(by: try #require(try await events.next(.policyScheduled).incident?.next?.delay))
            let stopped = try #require(await given.value)
            #expect(stopped.reason == .deadLettered)
            #expect(stopped.incident == own.id)
            #expect(stopped.failure?.text.title == "Given up")
            #expect(stopped.failure?.text.message.contains("poison.bin failed 3 times while other sync jobs at api.test succeeded") == true)
            #expect(stopped.failure?.text.message.contains("A transient failure (readTimeout)") == true, "the cause is kept")
            #expect(poisonRuns.count == 4)
            let gaveUp = try #require(try await events.next(.incidentResolved).incident)
            #expect(gaveUp.id == own.id)
            #expect(gaveUp.resolution == .givenUp)
            #expect(gaveUp.deadLettered == 1)
            #expect(await bus.snapshot().parkedJobs == 0)
        }
    }

    @Test func whenNothingSucceedsEveryFailedJobTakesItsTurnAsTheCanary() async throws {
        var configuration = Self.configuration
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
            // The first run of job 0 (1 and 2 arrived held), then canaries: those that merely
            // waited first, then each failed one in turn. One job failing for a reason of its own
            // cannot be every canary.
            #expect(runs.values == [0, 1, 2, 0, 1])
            let snapshot = await bus.snapshot()
            #expect(snapshot.incidents.count == 1, "an outage is one incident: nothing tells a job apart")
            #expect(snapshot.parkedJobs == 3)
        }
    }

    /// A server that answered goes down again while the incident releases its jobs: the first
    /// job that then fails may be taken for one failing on its own (nothing tells it apart
    /// yet), the next ones are not, and they stop the release as an outage does.
    @Test func whenTheServerGoesDownAgainMidReleaseItsFailuresAreNotTakenForTheJobs() async throws {
        var configuration = Self.configuration
        configuration.concurrency = .fixed(16)
        try await withRunningBus(configuration: configuration) { bus, clock, events in
            let apiDown = Flag(true)
            // Four uploads under way when the server goes down: all four fail.
            let barrier = Barrier(count: 4)
            await withDiscardingTaskGroup { group in
                for number in 0..<4 {
                    group.addTask {
                        _ = await bus.submit(.sync(number)) {
                            await barrier.arriveAndWait()
                            if apiDown.isSet { throw TestFailure.transient }
                        } completion: { _ in }
                    }
                }
            }
            let outage = try #require(try await events.next(.incidentOpened).incident)
            #expect(await bus.heldJobs().allSatisfy(\.hasFailed))
            // Job 4 merely waits: it will be the canary; the four that failed go after it.
            let deliveries = Counter()
            _ = await bus.submit(.sync(4)) {
                if apiDown.isSet { throw TestFailure.transient }
                // The server goes down again right after it answered.
                if deliveries.increment() == 1 { apiDown.set(true) }
            } completion: { _ in }
            apiDown.set(false)
            clock.advance(by: try #require(try await events.next(.policyScheduled).incident?.next?.delay))
            let stopped = try #require(try await events.next(.releaseStopped).incident)
            #expect(stopped.id == outage.id)
            let snapshot = await bus.snapshot()
            let own = snapshot.incidents.filter { $0.fingerprint.job != nil }
            #expect(own.count <= 1, "at most the first failure after the success is taken for the job's own: \(own.map(\.fingerprint))")
            #expect(snapshot.incidents.first { $0.id == outage.id }?.parked == 4 - own.count)
        }
    }

    @Test func aRealOutageAfterwardsHoldsTheBadJobsRetriesWithoutCountingThem() async throws {
        try await withRunningBus(configuration: Self.configuration) { bus, clock, events in
            let apiDown = Flag(false)
            let poisonRuns = Counter()
            _ = await bus.submit(Self.poison) {
                _ = poisonRuns.increment()
                throw TestFailure.transient
            } completion: { _ in }
            let outage = try #require(try await events.next(.incidentOpened).incident)
            _ = await bus.submit(.sync(1)) {
                if apiDown.isSet { throw TestFailure.transient }
            } completion: { _ in }
            clock.advance(by: try #require(try await events.next(.policyScheduled).incident?.next?.delay))
            #expect(try await events.next(.incidentResolved).incident?.id == outage.id)
            let own = try #require(await bus.snapshot().incidents.first)
            #expect(own.fingerprint.job != nil)
            #expect(poisonRuns.count == 2)

            // Now everything fails: an incident of everyone's holds the scope, and the bad job's
            // own retry waits for it instead of running and counting against its attempts.
            apiDown.set(true)
            _ = await bus.submit(.sync(2)) { throw TestFailure.transient } completion: { _ in }
            let everyone = try #require(try await events.next(.incidentOpened).incident)
            #expect(everyone.fingerprint.job == nil)
            let ownNext = try #require(await bus.incident(own.id).next)
            clock.advance(by: ownNext.delay)
            // The next word of its own incident: its retry put off, not run.
            var event = try await events.next(.policyScheduled)
            while event.incident?.id != own.id { event = try await events.next(.policyScheduled) }
            #expect(poisonRuns.count == 2, "held by the outage, the bad job did not run")
            #expect(events.count(of: .canaryFailed) == 0)
            #expect(try await bus.incident(own.id).state == .waiting)
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

    @Test func aJobOnItsOwnThatFailsWhileTheOutageReleasesOthersStaysOnItsOwn() async throws {
        var configuration = Self.configuration
        configuration.concurrency = .fixed(4)
        try await withRunningBus(configuration: configuration) { bus, clock, events in
            _ = await bus.submit(Self.poison) { throw TestFailure.transient } completion: { _ in }
            let outage = try #require(try await events.next(.incidentOpened).incident)
            let releasing = Barrier(count: 2)
            let finish = Barrier(count: 2)
            _ = await bus.submit(.sync(1)) {} completion: { _ in }
            // Still running when the bad job's own retry comes: the outage is still releasing.
            _ = await bus.submit(.sync(2)) {
                await releasing.arriveAndWait()
                await finish.arriveAndWait()
            } completion: { _ in }
            clock.advance(by: try #require(try await events.next(.policyScheduled).incident?.next?.delay))
            let own = try #require(try await events.next(.incidentOpened).incident)
            #expect(own.fingerprint.job == Self.poison.description)
            await releasing.arriveAndWait()
            #expect(try await bus.incident(outage.id).state == .releasing)

            let scheduled = try #require(try await events.next(.policyScheduled).incident)
            #expect(scheduled.id == own.id)
            clock.advance(by: try #require(scheduled.next?.delay))
            // Its failure is its own again: counted there, not taken for the outage's, and its
            // incident does not end as if its cause were gone.
            #expect(try await events.next(.canaryFailed).incident?.id == own.id)
            let stillOwn = try await bus.incident(own.id)
            #expect(stillOwn.resolution == nil)
            #expect(stillOwn.parked == 1)
            #expect(stillOwn.failures == 2)
            await finish.arriveAndWait()
        }
    }

}
