import ErrorBus
import ErrorBusTesting
import Logging
import ServiceLifecycle
import ServiceLifecycleTestKit
import Synchronization
import Testing

/// What the bus says and does is true of what happened: a refusal is matched to the credentials
/// it was sent with, an incident ends with the word that fits, its counts are what became of its
/// jobs, a job allowed no run is refused rather than a crash.
@Suite(.timeLimit(.minutes(1)))
struct TruthTests {
    @Test func aLateRefusalOfReplacedCredentialsRunsAgainWithoutASecondSignIn() async throws {
        let renewed = Flag(false)
        let authenticator = ScriptedAuthenticator(onRenewed: { renewed.set(true) })
        // Both jobs run at once: no slow start in the way.
        var configuration = ErrorBusConfiguration.forTesting
        configuration.concurrency = .fixed(4)
        try await withRunningBus(configuration: configuration, authenticator: authenticator) { bus, _, events in
            let inFlight = Barrier(count: 2)
            let refused = Barrier(count: 2)
            let lateRuns = Counter()
            // Its request left with the old token, and the refusal comes after the renewal.
            async let late = bus.perform(.sync(1)) { () async throws -> Int in
                lateRuns.increment()
                guard renewed.isSet else {
                    await inFlight.arriveAndWait()
                    await refused.arriveAndWait()
                    throw TestFailure.unauthenticated
                }
                return 1
            }
            await inFlight.arriveAndWait()
            // Another job meets the revoked token: one incident, one sign-in, and it runs again.
            let other = try await bus.perform(.sync(2)) { () async throws -> Int in
                guard renewed.isSet else { throw TestFailure.unauthenticated }
                return 2
            }
            #expect(other == 2)
            try await events.next(.incidentResolved)
            await refused.arriveAndWait()

            #expect(try await late == 1)
            #expect(lateRuns.count == 2)
            #expect(authenticator.callCount == 1)
            #expect(events.count(of: .incidentOpened) == 1)
            #expect(await bus.snapshot().incidents.isEmpty)
        }
    }

    @Test func aJobAllowedNoRunIsRefusedWithAReason() async throws {
        try await withRunningBus { bus, _, events in
            var job = Job.sync(0)
            job.maxAttempts = 0
            let runs = Counter()
            let submission = await bus.submit(job) { runs.increment() } completion: { _ in }
            guard case .stopped(let stopped) = submission else {
                Issue.record("a job allowed no run should be refused, got \(submission)")
                return
            }
            #expect(stopped.reason == .attemptsExhausted)
            #expect(stopped.failure?.category.kind == .invalid)
            #expect(stopped.failure?.text.message.contains("Job.maxAttempts") == true)
            #expect(runs.count == 0)
            #expect(events.count(of: .incidentOpened) == 0)
        }
    }

    @Test func anIncidentWhoseJobsAnOperatorTookEndsDiscardedNotRecovered() async throws {
        try await withRunningBus { bus, clock, events in
            for number in 0..<3 {
                _ = await bus.submit(.sync(number)) { throw TestFailure.transient } completion: { _ in }
            }
            await bus.waitUntilParked(3)
            let id = try #require(await bus.snapshot().incidents.first?.id)
            for number in 0..<3 { try await bus.cancel(job: Job.sync(number).id, service: "sync") }
            // The cause is still there; nothing is left to try it with.
            clock.advance(by: try #require(try await events.next(.policyScheduled).incident?.next?.delay))
            let resolved = try #require(try await events.next(.incidentResolved).incident)
            #expect(resolved.id == id)
            #expect(resolved.resolution == .discarded)
            #expect(IncidentReporter.ending(of: resolved).hasPrefix("incident \(id) discarded by an operator"))
            #expect(events.count(of: .canaryFailed) == 0)
        }
    }

    @Test func jobsTheirOwnerSetsAsideCountAsTheIncidentsDeadLetters() async throws {
        try await withRunningBus { bus, _, events in
            for number in 0..<3 {
                _ = await bus.submit(.sync(number)) { throw TestFailure.transient } completion: { _ in }
            }
            await bus.waitUntilParked(3)
            let id = try #require(await bus.snapshot().incidents.first?.id)
            let failure = Failure(
                category: .invalid(reason: "over a limit"),
                scope: "api.test",
                cause: "backlogFull",
                service: "sync",
                text: OperatorText(title: "Dropped to make room", message: "the backlog is full")
            )
            try await bus.deadLetter(job: Job.sync(1).id, service: "sync", failure: failure)
            try await bus.deadLetter(job: Job.sync(2).id, service: "sync", failure: failure)
            #expect(try await bus.incident(id).deadLettered == 2)
            for _ in 0..<2 { try await events.next(.jobDeadLettered) }
        }
    }

    @Test func aCanaryWhoseWorkWasReplacedSaysNothingOfTheCause() async throws {
        try await withRunningBus { bus, clock, events in
            let down = Flag(true)
            let replaced = OneShotBox<JobStopped>()
            _ = await bus.submit(.sync(0)) { if down.isSet { throw TestFailure.transient } } completion: { _ in }
            // Waits behind the incident, so it is the first canary; its work is replaced by then.
            _ = await bus.submit(.sync(1)) {
                throw JobStopped(evaluation: .cancel, reason: .superseded)
            } completion: { outcome in
                if case .stopped(let stopped) = outcome { replaced.set(stopped) }
            }
            _ = await bus.submit(.sync(2)) { if down.isSet { throw TestFailure.transient } } completion: { _ in }
            await bus.waitUntilParked(3)
            clock.advance(by: try #require(try await events.next(.policyScheduled).incident?.next?.delay))
            // The next job is tried at once, and meets the cause: no release.
            try await events.next(.canaryFailed)
            #expect(await replaced.value?.reason == .superseded)
            #expect(events.count(of: .releaseStarted) == 0)
            let incident = try #require(await bus.snapshot().incidents.first)
            #expect(incident.parked == 2)
            #expect(incident.deadLettered == 0)
        }
    }

    @Test func theReporterTellsIncidentsOpenBeforeItStartedAndThoseTheStopEnded() async throws {
        let logger = Logger(label: "test", factory: { _ in SwiftLogNoOpLogHandler() })
        let bus = ErrorBus(configuration: .forTesting, clock: ManualClock(), logger: logger)
        for number in 0..<3 {
            _ = await bus.submit(.sync(number)) { throw TestFailure.transient } completion: { _ in }
        }
        let (lines, line) = AsyncStream.makeStream(of: String.self)
        let reporter = IncidentReporter(bus: bus, logger: Logger(label: "test", factory: { _ in LineHandler(line) }))
        try await testGracefulShutdown { trigger in
            let group = ServiceGroup(services: [reporter, bus], logger: logger)
            async let running: Void = group.run()
            var told = lines.makeAsyncIterator()
            #expect(await told.next()?.hasPrefix("incident 1 opened: Test failure") == true)
            trigger.triggerGracefulShutdown()
            try await running
            let ended = try #require(await told.next())
            #expect(ended.hasPrefix("incident 1 still open when the bus stopped"))
            #expect(ended.hasSuffix("1 failure absorbed, 0 jobs released, 0 dead-lettered, 3 jobs still held"))
        }
    }
}

/// Hands every log line's message to a stream, for a test to await.
private struct LineHandler: LogHandler {
    let line: AsyncStream<String>.Continuation
    var metadata: Logger.Metadata = [:]
    var logLevel: Logger.Level = .info

    init(_ line: AsyncStream<String>.Continuation) { self.line = line }

    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    func log(
        level: Logger.Level,
        message: Logger.Message,
        metadata: Logger.Metadata?,
        source: String,
        file: String,
        function: String,
        line number: UInt
    ) {
        line.yield("\(message)")
    }
}
