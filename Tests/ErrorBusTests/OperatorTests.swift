import ErrorBus
import ErrorBusTesting
import Logging
import Testing

@Suite(.timeLimit(.minutes(1)))
struct OperatorTests {
    @Test func aPausedServiceParksItsJobsUntilResumed() async throws {
        try await withRunningBus { bus, _, events in
            let incident = await bus.pause("sync")
            #expect(await bus.pause("sync") == incident)
            let runs = Counter()
            let submission = await bus.submit(.sync(0)) { runs.increment() } completion: { _ in }
            guard case .parked(incident) = submission else {
                Issue.record("a paused service's job should park, got \(submission)")
                return
            }
            // Other services run.
            let other = await bus.submit(Job(id: "a", service: "loader", scope: "api.test")) {} completion: { _ in }
            guard case .completed = other else {
                Issue.record("another service should run, got \(other)")
                return
            }
            #expect(runs.count == 0)
            #expect(await bus.snapshot().incidents.first?.state == .paused)
            #expect(await bus.resume("sync") == 1)
            let resolved = try await events.next(.incidentResolved)
            #expect(resolved.incident?.released == 1)
            #expect(runs.count == 1)
        }
    }

    @Test func aFatalFailurePausesItsServiceUntilTheProbeSeesTheConditionClear() async throws {
        let clock = ManualClock()
        let probe = ScriptedProbe(clock: clock, answers: [.unreachable(reason: "disk still full")])
        try await withRunningBus(clock: clock, probe: probe) { bus, clock, events in
            let diskFull = Flag(true)
            _ = await bus.submit(.sync(0)) {
                if diskFull.isSet { throw TestFailure(.fatal, cause: "ENOSPC") }
            } completion: { _ in }
            let opened = try #require(try await events.next(.incidentOpened).incident)
            #expect(opened.fingerprint.scope == "sync")
            clock.advance(by: try #require(try await events.next(.policyScheduled).incident?.next?.delay))
            #expect(try await events.next(.probeFailed).reason == "disk still full")
            diskFull.set(false)
            clock.advance(by: try #require(try await events.next(.policyScheduled).incident?.next?.delay))
            try await events.next(.incidentResolved)
        }
    }

    @Test func discardStopsEveryParkedJobAndResolves() async throws {
        try await withRunningBus { bus, _, events in
            let stops = OrderLog()
            for number in 0..<4 {
                _ = await bus.submit(.sync(number)) { throw TestFailure.transient } completion: { outcome in
                    if case .stopped(let stopped) = outcome, stopped.reason == .discarded { stops.append(number) }
                }
            }
            let id = try #require(await bus.snapshot().incidents.first?.id)
            #expect(try await bus.discard(incident: id) == 4)
            // In release order: the jobs that merely waited behind the incident, then the one
            // whose failure opened it.
            #expect(stops.values == [1, 2, 3, 0])
            #expect(try await events.next(.incidentResolved).incident?.resolution == .discarded)
            #expect(await bus.snapshot().parkedJobs == 0)
            await #expect(throws: ErrorBusError.noSuchIncident(id)) { try await bus.discard(incident: id) }
        }
    }

    @Test func anOwnerSetsOneParkedJobAsideAsADeadLetter() async throws {
        try await withRunningBus { bus, _, _ in
            let stopped = OneShotBox<JobStopped>()
            for number in 0..<3 {
                _ = await bus.submit(.sync(number)) { throw TestFailure.transient } completion: { outcome in
                    if case .stopped(let stop) = outcome { stopped.set(stop) }
                }
            }
            let id = try #require(await bus.snapshot().incidents.first?.id)
            let failure = Failure(
                category: .invalid(reason: "over a limit"),
                scope: "api",
                cause: "backlogFull",
                service: "sync",
                text: OperatorText(title: "Dropped to make room", message: "the backlog was full.")
            )
            try await bus.deadLetter(job: "item-1", service: "sync", failure: failure)
            let stop = try #require(await stopped.value)
            #expect(stop.reason == .deadLettered)
            #expect(stop.failure?.cause == "backlogFull" && stop.failure?.text.title == "Dropped to make room")
            #expect(stop.incident == id)
            #expect(try await bus.parkedJobs(in: id).map(\.id) == ["item-2", "item-0"])
            await #expect(throws: ErrorBusError.noSuchJob(service: "sync", id: "item-1")) {
                try await bus.deadLetter(job: "item-1", service: "sync", failure: failure)
            }
        }
    }

    @Test func cancellingOneParkedJob() async throws {
        try await withRunningBus { bus, _, _ in
            let cancelled = OneShotBox<JobStopped>()
            for number in 0..<3 {
                _ = await bus.submit(.sync(number)) { throw TestFailure.transient } completion: { outcome in
                    if case .stopped(let stopped) = outcome { cancelled.set(stopped) }
                }
            }
            try await bus.cancel(job: "item-1", service: "sync")
            #expect(await cancelled.value?.reason == .cancelledByOperator)
            let id = try #require(await bus.snapshot().incidents.first?.id)
            #expect(try await bus.parkedJobs(in: id).map(\.id) == ["item-2", "item-0"])
            await #expect(throws: ErrorBusError.noSuchJob(service: "sync", id: "item-1")) {
                try await bus.cancel(job: "item-1", service: "sync")
            }
        }
    }

    @Test func cancellingAWaitingCallerWithdrawsItsJob() async throws {
        try await withRunningBus { bus, _, _ in
            let failures = FailureCounter(target: 1)
            await bus.connect(failures, to: "sync")
            let stopped = await withTaskGroup(of: JobStopped?.self) { group in
                group.addTask {
                    do throws(JobStopped) {
                        try await bus.perform(.sync(0)) { () async throws -> Void in throw TestFailure.transient }
                        return nil
                    } catch {
                        return error
                    }
                }
                await failures.reached()
                group.cancelAll()
                return await group.next() ?? nil
            }
            #expect(stopped?.reason == .taskCancelled)
            // The withdrawal travels through the bus's work queue; no event marks it.
            while await bus.snapshot().parkedJobs != 0 { await Task.yield() }
        }
    }

    @Test func stoppingTheBusEndsEveryWaitingJob() async throws {
        let bus = ErrorBus(
            configuration: .forTesting,
            clock: ManualClock(),
            logger: Logger(label: "test", factory: { _ in SwiftLogNoOpLogHandler() })
        )
        let failures = FailureCounter(target: 3)
        await bus.connect(failures, to: "sync")
        let stops = await withTaskGroup(of: [JobStopped].self) { callers in
            callers.addTask {
                await withTaskGroup(of: JobStopped?.self) { group in
                    for number in 0..<3 {
                        // Three hosts, three incidents: every job fails and parks.
                        group.addTask {
                            do throws(JobStopped) {
                                try await bus.perform(.sync(number, scope: "host-\(number)")) { () async throws -> Void in
                                    throw TestFailure.transient
                                }
                                return nil
                            } catch {
                                return error
                            }
                        }
                    }
                    return await group.reduce(into: []) { if let stop = $1 { $0.append(stop) } }
                }
            }
            // Only the bus's task is cancelled, as a service group does on shutdown.
            await withDiscardingTaskGroup { busGroup in
                busGroup.addTask { await bus.run() }
                await failures.reached()
                busGroup.cancelAll()
            }
            return await callers.next() ?? []
        }
        #expect(stops.count == 3)
        #expect(stops.allSatisfy { $0.reason == .shutdown })
        let refused = await bus.submit(.sync(9)) {} completion: { _ in }
        guard case .stopped(let stopped) = refused, stopped.reason == .shutdown else {
            Issue.record("a stopped bus should refuse new work, got \(refused)")
            return
        }
        #expect(await bus.snapshot().recentlyResolved.map(\.resolution) == [.shutdown, .shutdown, .shutdown])
    }

    /// A canary that is still failing when the bus stops says nothing of its incident's cause:
    /// the incident ends with the bus's run (`shutdown`), never as `recovered`, which would
    /// tell the journal that the cause went away.
    @Test func aCanaryCutShortByTheStopDoesNotRecoverItsIncident() async throws {
        let clock = ManualClock()
        let bus = ErrorBus(
            configuration: .forTesting,
            clock: clock,
            logger: Logger(label: "test", factory: { _ in SwiftLogNoOpLogHandler() })
        )
        let events = EventLog(await bus.subscribe(bufferSize: 10_000))
        let runs = Counter()
        let stop = await withTaskGroup(of: JobStopped?.self) { callers in
            callers.addTask {
                do throws(JobStopped) {
                    try await bus.perform(.sync(0)) { () async throws -> Void in
                        if runs.increment() > 1 {
                            // The canary: the API still fails it, but only once the bus stops.
                            try? await Task.sleep(for: .seconds(3_600))
                        }
                        throw TestFailure.transient
                    }
                    return nil
                } catch {
                    return error
                }
            }
            await withDiscardingTaskGroup { busGroup in
                busGroup.addTask { await bus.run() }
                let scheduled = try? await events.next(.policyScheduled)
                clock.advance(by: scheduled?.incident?.next?.delay ?? .seconds(60))
                while runs.count < 2 { await Task.yield() }
                // Only the bus's task is cancelled, as a service group does on shutdown.
                busGroup.cancelAll()
            }
            return await callers.next() ?? nil
        }
        #expect(stop?.reason == .shutdown)
        let resolved = await bus.snapshot().recentlyResolved
        #expect(resolved.map(\.resolution) == [.shutdown], "\(resolved.map { IncidentReporter.ending(of: $0) })")
    }
}
