import ErrorBus
import ErrorBusTesting
import Testing

@Suite(.timeLimit(.minutes(1)))
struct IncidentGroupingTests {
    @Test func tenThousandConcurrentFailuresMakeOneIncidentAndOnePolicyRun() async throws {
        let clock = ManualClock()
        let probe = ScriptedProbe(clock: clock)
        // Ten thousand at once: no concurrency limit in the way.
        var configuration = ErrorBusConfiguration.forTesting
        configuration.concurrency = .fixed(10_000)
        try await withRunningBus(configuration: configuration, clock: clock, probe: probe) { bus, clock, events in
            let jobs = 10_000
            let down = Flag(true)
            let barrier = Barrier(count: jobs)
            let completed = Counter()
            // Every operation is in flight before the first one fails: 10,000 real failures.
            let submissions = await withTaskGroup(of: Submission.self, returning: [Submission].self) { group in
                for number in 0..<jobs {
                    group.addTask {
                        await bus.submit(.sync(number)) {
                            if down.isSet {
                                await barrier.arriveAndWait()
                                throw TestFailure.unreachable
                            }
                        } completion: { outcome in
                            if case .succeeded = outcome { completed.increment() }
                        }
                    }
                }
                return await group.reduce(into: []) { $0.append($1) }
            }
            let incidents = Set(submissions.compactMap { submission -> IncidentID? in
                if case .parked(let id) = submission { id } else { nil }
            })
            #expect(incidents.count == 1)
            #expect(submissions.count == jobs)

            let snapshot = await bus.snapshot()
            #expect(snapshot.incidents.count == 1)
            #expect(snapshot.incidents.first?.failures == jobs)
            #expect(snapshot.incidents.first?.parked == jobs)
            #expect(snapshot.parkedByService["sync"]?[.unreachable] == jobs)

            down.set(false)
            let scheduled = try await events.next(.policyScheduled)
            clock.advance(by: try #require(scheduled.incident?.next?.delay))
            let resolved = try #require(try await events.next(.incidentResolved).incident)
            #expect(resolved.resolution == .recovered)
            #expect(resolved.failures == jobs)
            #expect(resolved.released == jobs)
            #expect(completed.count == jobs)
            #expect(probe.callTimes.count == 1)
            #expect(events.count(of: .incidentOpened) == 1)
            #expect(events.count(of: .policyScheduled) == 1)
        }
    }

    @Test func aHeldScopeParksNewJobsWithoutRunningThem() async throws {
        try await withRunningBus(probe: ScriptedProbe(clock: ManualClock(), otherwise: .unreachable(reason: "down"))) { bus, _, _ in
            let runs = Counter()
            let first = await bus.submit(.sync(0)) { runs.increment(); throw TestFailure.unreachable } completion: { _ in }
            guard case .parked(let incident?) = first else {
                Issue.record("the first failure should park its job, got \(first)")
                return
            }
            let second = await bus.submit(.sync(1)) { runs.increment() } completion: { _ in }
            guard case .parked(incident) = second else {
                Issue.record("a job of the held scope should park under the open incident, got \(second)")
                return
            }
            #expect(runs.count == 1)

            // Another host is not held.
            let elsewhere = await bus.submit(.sync(2, scope: "cdn.test")) { runs.increment() } completion: { _ in }
            guard case .completed = elsewhere else {
                Issue.record("a job of another scope should run, got \(elsewhere)")
                return
            }
            #expect(runs.count == 2)
            #expect(await bus.snapshot().parkedJobs == 2)
        }
    }

    /// With `.perJob` (the ablation of scripts/bench-outages) the job joins the fingerprint: every
    /// job that meets the same cause runs, fails and opens an incident of its own, and none holds
    /// back the others. Grouped by cause, the first failure opens the only incident and the other
    /// jobs park under it without running.
    @Test(arguments: [(ErrorBusConfiguration.Grouping.byCause, 1), (.perJob, 5)])
    func groupingDecidesHowManyIncidentsOneCauseOpens(grouping: ErrorBusConfiguration.Grouping, incidents: Int) async throws {
        var configuration = ErrorBusConfiguration.forTesting
        configuration.grouping = grouping
        let probe = ScriptedProbe(clock: ManualClock(), otherwise: .unreachable(reason: "down"))
        try await withRunningBus(configuration: configuration, probe: probe) { bus, _, events in
            let runs = Counter()
            var parkedIn: [IncidentID] = []
            for number in 0..<5 {
                let submission = await bus.submit(.sync(number)) { runs.increment(); throw TestFailure.unreachable } completion: { _ in }
                guard case .parked(let id?) = submission else {
                    Issue.record("job \(number) should park, got \(submission)")
                    return
                }
                parkedIn.append(id)
            }
            #expect(Set(parkedIn).count == incidents)
            #expect(runs.count == incidents)

            let snapshot = await bus.snapshot()
            #expect(snapshot.incidents.count == incidents)
            #expect(snapshot.parkedJobs == 5)
            #expect(Set(snapshot.incidents.map(\.fingerprint)).count == incidents)
            #expect(snapshot.incidents.allSatisfy { $0.fingerprint.scope == "api.test" && $0.fingerprint.kind == .unreachable })
            for _ in 0..<incidents { try await events.next(.incidentOpened) }
            #expect(events.count(of: .incidentOpened) == incidents)
        }
    }

    @Test func reportedFailuresJoinWithoutEvents() async throws {
        try await withRunningBus { bus, _, events in
            let failure = Failure(
                category: .transient,
                scope: "api.test",
                cause: "http503",
                service: "loader",
                text: OperatorText(title: "Server error", message: "The API answered 503.")
            )
            var ids = Set<IncidentID>()
            for _ in 0..<100_000 {
                if let id = await bus.report(failure) { ids.insert(id) }
            }
            #expect(ids.count == 1)
            let snapshot = await bus.snapshot()
            #expect(snapshot.incidents.map(\.failures) == [100_000])
            try await events.next(.policyScheduled)
            #expect(events.seen.map(\.kind) == [.incidentOpened, .policyScheduled])
        }
    }

    @Test func uncategorisedErrorsFallBackToTransient() async throws {
        struct Opaque: Error {}
        try await withRunningBus { bus, _, events in
            let submission = await bus.submit(.sync(0)) { throw Opaque() } completion: { _ in }
            guard case .parked = submission else {
                Issue.record("an uncategorised error should park its job, got \(submission)")
                return
            }
            let opened = try #require(try await events.next(.incidentOpened).incident)
            #expect(opened.category == .transient)
            #expect(opened.fingerprint.cause == "Opaque")
            #expect(opened.text.title == "Unexpected error")
        }
    }
}
