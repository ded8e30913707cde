import ErrorBus
import ErrorBusTesting
import Synchronization
import Testing

/// Jobs whose owner keeps them in a durable queue of its own (`ErrorBus.run(_:operation:)`): the
/// bus decides where each waits and keeps nothing of it; the owner records each verdict, and the
/// bus asks the owner's `ParkedJobSource` for a canary and tells it when an incident releases.
@Suite(.timeLimit(.minutes(1)))
struct DurableQueueTests {
    @Test func anOutageParksTheJobsWithTheirOwnerAndTheBusHoldsNone() async throws {
        try await withRunningBus { bus, clock, events in
            let scope = ScopeSwitch()
            let queue = DurableQueue(bus: bus) { _ in try scope.check() }
            await bus.setParkedJobSource(queue, forService: "sync")
            await queue.add((0..<50).map { Job.sync($0) })
            let verdicts = await queue.runQueued()

            let incident = try #require(try await events.next(.incidentOpened).incident?.id)
            #expect(verdicts.count == 50)
            #expect(verdicts.allSatisfy { if case .parked(incident, _) = $0 { true } else { false } })
            #expect(await queue.count(.parked(incident, failed: true)) >= 1)
            // The queue is the one place they wait: the bus holds none of them, in any count.
            let snapshot = await bus.snapshot()
            #expect(snapshot.parkedJobs == 0)
            #expect(snapshot.incidents.map(\.parked) == [0])

            // The cause goes away: the canary is one of the queue's parked jobs, run by the bus
            // through the source; then the release gives the others back to the queue at once,
            // and is over once the owner has run them.
            scope.heal()
            clock.advance(by: try #require(try await events.next(.policyScheduled).incident?.next?.delay))
            await queue.released(incident)
            #expect(await queue.count(.delivered) == 1)
            #expect(await queue.count(.queued) == 49)
            #expect(await bus.snapshot().incidents.map(\.state) == [.releasing])

            let again = await queue.runQueued()
            #expect(again.allSatisfy { if case .succeeded = $0 { true } else { false } })
            #expect(await queue.count(.delivered) == 50)
            let resolved = try await events.next(.incidentResolved)
            #expect(resolved.incident?.resolution == .recovered)
            #expect(await queue.releases == [incident])
        }
    }

    @Test func aJobHeldBackBehindAnIncidentDoesNotRun() async throws {
        try await withRunningBus { bus, _, events in
            let queue = DurableQueue(bus: bus) { _ in throw TestFailure.unreachable }
            await bus.setParkedJobSource(queue, forService: "sync")
            await queue.add([.sync(0)])
            _ = await queue.runQueued()
            let incident = try #require(try await events.next(.incidentOpened).incident?.id)

            let ran = Mutex(false)
            let verdict = await bus.run(.sync(1)) { ran.withLock { $0 = true } }
            guard case .parked(incident, failed: false) = verdict else {
                Issue.record("held back: \(verdict)")
                return
            }
            #expect(!ran.withLock { $0 })
        }
    }

    /// A scope that refuses one job while it serves the others paces: the owner keeps the job,
    /// to run again after the back-off the verdict names, and the incident ends once that
    /// back-off is over and the job ran without failing again, as it does for the jobs the bus
    /// keeps: the bus asks the owner to say when it ran.
    @Test func aJobPacedInADurableQueueComesBackAfterItsBackOffAndTheIncidentEnds() async throws {
        try await withRunningBus { bus, clock, events in
            let refused = Mutex<Set<String>>(["item-20"])
            let queue = DurableQueue(bus: bus) { job in
                if refused.withLock({ $0.contains(job.id) }) { throw TestFailure.transient }
            }
            await bus.setParkedJobSource(queue, forService: "sync")
            await queue.add((0..<20).map { Job.sync($0) })
            _ = await queue.runQueued()
            await queue.add([.sync(20)])
            let verdicts = await queue.runQueued()
            guard case .retry(let after)? = verdicts.first else {
                Issue.record("paced: \(verdicts)")
                return
            }
            let incident = try #require(try await events.next(.incidentOpened).incident)
            #expect(incident.state == .pacing)
            #expect(await bus.snapshot().parkedJobs == 0)
            #expect(await queue.count(.queued) == 1)

            // Its back-off over, the incident waits for the owner to run it: it does not end
            // while the job is still queued.
            refused.withLock { $0 = [] }
            clock.advance(by: after)
            await queue.released(incident.id)
            #expect(await bus.snapshot().incidents.map(\.id) == [incident.id])
            // Served when it runs again: the incident has nothing left to wait for.
            #expect(await queue.runQueued().count == 1)
            let resolved = try await events.next(.incidentResolved)
            #expect(resolved.incident?.id == incident.id && resolved.incident?.resolution == .recovered)
            #expect(await queue.count(.delivered) == 21)
        }
    }

    @Test func aFailedCanaryIsParkedAgainWithItsOwner() async throws {
        try await withRunningBus { bus, clock, events in
            let (queue, incident) = try await DurableQueue.failing([.sync(0), .sync(1)], on: bus, events)

            clock.advance(by: try #require(try await events.next(.policyScheduled).incident?.next?.delay))
            try await events.next(.canaryFailed)
            // It ran once more and waits again, among those that failed under the incident.
            #expect(await queue.canaries == [incident])
            #expect(await queue.count(.parked(incident, failed: true)) == 2)
            #expect(await bus.snapshot().parkedJobs == 0)
        }
    }

    @Test func anIncidentWhoseOwnerHasNoJobLeftClosesUnrecovered() async throws {
        try await withRunningBus { bus, clock, events in
            let (queue, _) = try await DurableQueue.failing([.sync(0)], on: bus, events)
            // An operator discards the parked job in the owner's queue.
            await queue.discardParked()

            clock.advance(by: try #require(try await events.next(.policyScheduled).incident?.next?.delay))
            let resolved = try await events.next(.incidentResolved)
            // Nothing said its cause was gone.
            #expect(resolved.incident?.resolution == .closed)
            #expect(await queue.canaries.isEmpty)
        }
    }
}

extension DurableQueueTests {
    /// A job refused on its own among good ones: the evidence of its failed runs carries from
    /// one run to the next, though the bus keeps nothing of the job between them, and it is set
    /// aside under an incident of its own.
    @Test func aJobThatFailsOnItsOwnAmongGoodOnesIsSetAsideAcrossItsRuns() async throws {
        try await withRunningBus(configuration: IsolationTests.configuration) { bus, clock, _ in
            await PacingTests.history(bus, clock)
            let poison = IsolationTests.poison(0)
            var number = 0
            var own: IncidentSnapshot?
            for _ in 0..<20 where own == nil {
                for _ in 0..<10 {
                    number += 1
                    _ = await bus.run(.sync(number)) {}
                }
                let verdict = await bus.run(poison) { throw TestFailure(.transient, cause: "http500") }
                if case .parked(let id, failed: true) = verdict, let incident = try? await bus.incident(id), incident.fingerprint.job != nil {
                    own = incident
                }
                clock.advance(by: .seconds(1))
            }
            #expect(own?.fingerprint.job == poison.description, "set aside on its own")
            #expect(await bus.snapshot().parkedJobs == 0)
        }
    }
}

/// A scope that fails until it heals.
private final class ScopeSwitch: Sendable {
    private let failing = Mutex(true)

    func check() throws {
        if failing.withLock({ $0 }) { throw TestFailure.transient }
    }

    func heal() {
        failing.withLock { $0 = false }
    }
}

/// A library user's durable queue, kept in memory for the test: each job a row with a state,
/// run through the bus's durable path, each verdict recorded.
private actor DurableQueue: ParkedJobSource {
    enum State: Equatable {
        case queued
        case running
        case parked(IncidentID, failed: Bool)
        case delivered
        case stopped
        case discarded
    }

    let bus: ErrorBus
    let operation: @Sendable (Job) async throws -> Void
    /// Jobs in the order they were queued, and where each stands.
    private var order: [Job] = []
    private var states: [String: State] = [:]
    /// The incidents that released their jobs, and those whose canary the bus asked for.
    private(set) var releases: [IncidentID] = [] {
        didSet { releaseAsked.yield() }
    }
    private(set) var canaries: [IncidentID] = []
    private let (releasesAsked, releaseAsked) = AsyncStream.makeStream(of: Void.self)
    /// Releases waiting for the jobs queued or running when they were asked to have run.
    private var releaseWaits: [(jobs: Set<String>, continuation: CheckedContinuation<Void, Never>)] = []

    init(bus: ErrorBus, operation: @escaping @Sendable (Job) async throws -> Void) {
        self.bus = bus
        self.operation = operation
    }

    /// A queue whose every run fails with a transient failure, registered with `bus`, its
    /// `jobs` run once: parked under the incident they opened.
    static func failing(_ jobs: [Job], on bus: ErrorBus, _ events: EventLog) async throws -> (DurableQueue, IncidentID) {
        let queue = DurableQueue(bus: bus) { _ in throw TestFailure.transient }
        await bus.setParkedJobSource(queue, forService: "sync")
        await queue.add(jobs)
        _ = await queue.runQueued()
        return (queue, try #require(try await events.next(.incidentOpened).incident?.id))
    }

    func add(_ jobs: [Job]) {
        for job in jobs {
            order.append(job)
            states[job.id] = .queued
        }
    }

    func count(_ state: State) -> Int {
        states.values.count { $0 == state }
    }

    /// Runs every queued job at once through the bus, and records each verdict.
    func runQueued() async -> [Verdict] {
        let queued = order.filter { states[$0.id] == .queued }
        for job in queued { states[job.id] = .running }
        let (bus, operation) = (bus, operation)
        let verdicts = await withTaskGroup(of: (Job, Verdict).self) { group in
            for job in queued {
                group.addTask { (job, await bus.run(job) { try await operation(job) }) }
            }
            return await group.reduce(into: []) { $0.append($1) }
        }
        for (job, verdict) in verdicts { record(job, verdict) }
        return verdicts.map(\.1)
    }

    func record(_ job: Job, _ verdict: Verdict) {
        states[job.id] =
            switch verdict {
            case .succeeded: .delivered
            case .parked(let incident, let failed): .parked(incident, failed: failed)
            case .retry: .queued
            case .stopped: .stopped
            }
        resumeRanReleases()
    }

    /// Waits until the bus has asked to release `incident`.
    func released(_ incident: IncidentID) async {
        var asked = releasesAsked.makeAsyncIterator()
        while !releases.contains(incident) {
            guard await asked.next() != nil else { return }
        }
    }

    private func resumeRanReleases() {
        releaseWaits.removeAll { wait in
            guard !wait.jobs.contains(where: { [.queued, .running].contains(states[$0]) }) else { return false }
            wait.continuation.resume()
            return true
        }
    }

    func discardParked() {
        for (id, state) in states {
            if case .parked = state { states[id] = .discarded }
        }
    }

    /// The next job parked under `incident`: those that merely wait first, then those that failed.
    private func take(parkedUnder incident: IncidentID) -> Job? {
        let job = order.first { states[$0.id] == .parked(incident, failed: false) }
            ?? order.first { states[$0.id] == .parked(incident, failed: true) }
        if let job { states[job.id] = .running }
        canaries.append(incident)
        return job
    }

    func runOne(parkedUnder incident: IncidentID, as canary: CanaryRun) async -> Verdict? {
        guard let job = take(parkedUnder: incident) else {
            canaries.removeLast()
            return nil
        }
        let operation = operation
        let verdict = await canary.run(job) { try await operation(job) }
        record(job, verdict)
        return verdict
    }

    /// Queues the jobs parked under `incident` again, and returns once they and the jobs queued
    /// before them have run.
    func release(_ incident: IncidentID) async {
        for (id, state) in states {
            if case .parked(incident, _) = state { states[id] = .queued }
        }
        let jobs = Set(states.filter { [.queued, .running].contains($0.value) }.keys)
        releases.append(incident)
        await withCheckedContinuation { continuation in
            releaseWaits.append((jobs, continuation))
            resumeRanReleases()
        }
    }
}
