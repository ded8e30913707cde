#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import Logging
import Synchronization

extension ErrorBus {
    /// Opens an incident for a failure with a new fingerprint, parks (or dead-letters) the command
    /// that met it, and starts the incident's policy.
    @discardableResult
    func open(
        _ failure: Failure,
        parking command: Command?,
        policy: IncidentPolicy<TimelineInstant>? = nil,
        isolation: Bool = false,
        pacing: Bool = false
    ) -> (id: IncidentID, decision: FailureDecision?) {
        let id = IncidentID(rawValue: nextIncidentID)
        nextIncidentID += 1
        let now = clock.now()
        let incident = IncidentRecord(
            id: id,
            failure: failure,
            policy: policy ?? IncidentPolicy(for: failure, configuration: configuration, canProbe: probe(for: failure.fingerprint.scope) != nil),
            isolation: isolation,
            at: now,
            date: clock.date(of: now)
        )
        incidents[id] = incident
        openIncidents[failure.fingerprint] = incident
        // Pacing, its scope serves others: nothing is held, and its policy starts only if the
        // scope stops serving.
        transition(incident, to: pacing ? .pacing(running: false) : incident.parks ? .waiting : .collecting)
        logger.debug("incident opened", metadata: ["incident": "\(id)", "fingerprint": "\(failure.fingerprint)"])

        // Subscribers see the incident opened with its first step already decided (what it
        // waits for and until when), then what became of the job that opened it (parked or
        // dead-lettered under it) and the events that step emitted.
        eventsHeldForOpening = []
        var decision: FailureDecision?
        if let command {
            if pacing {
                decision = pace(command, failure, in: incident)
            } else {
                decision = incident.parks
                    ? park(command, in: incident, failed: true, failure: failure)
                    : deadLetter(command, failure, in: incident)
            }
        }
        if !pacing {
            execute(incident.policy.start(with: failure, at: now, using: &random), for: incident)
            if let command { postponeCanary(of: incident, byCostOf: command) }
        }
        let held = eventsHeldForOpening ?? []
        eventsHeldForOpening = nil
        emit(BusEvent(kind: .incidentOpened, incident: incident.snapshot(at: now)))
        for event in held { emit(event) }
        return (id, decision)
    }

    /// Carries out what an incident's policy decided.
    func execute(_ action: PolicyAction<TimelineInstant>, for incident: IncidentRecord, byOperator: Bool = false) {
        switch action {
        case .wait(let deadline, let step):
            schedule(step, at: deadline, for: incident)
        case .now(let step):
            take(step, for: incident, byOperator: byOperator)
        case .release:
            startRelease(incident)
        case .needsOperator(let reason):
            transition(incident, to: .needsOperator)
            emit(BusEvent(kind: .escalated, incident: incident.snapshot(at: clock.now()), reason: reason))
        case .hold:
            transition(incident, to: .paused)
        }
    }

    /// Schedules a step; a later deadline for the step already scheduled only moves the deadline
    /// (``IncidentRecord/postpone(_:to:)``).
    func schedule(_ step: PolicyStep, at deadline: TimelineInstant, for incident: IncidentRecord) {
        guard !incident.postpone(step, to: deadline) else { return }
        transition(incident, to: step == .close ? .collecting : .waiting, next: (step, deadline))
        work.yield(.timer(incident.id, generation: incident.generation, deadline: deadline))
        if step != .close {
            emit(BusEvent(kind: .policyScheduled, incident: incident.snapshot(at: clock.now())))
        }
    }

    func timerFired(_ id: IncidentID, generation: UInt64) {
        guard let incident = incidents[id] else { return }
        switch incident.timerFired(generation: generation, at: clock.now()) {
        case .stale: break
        case .rearm(let deadline): work.yield(.timer(id, generation: generation, deadline: deadline))
        case .take(let step): take(step, for: incident)
        }
    }

    /// Takes a policy step now.
    func take(_ step: PolicyStep, for incident: IncidentRecord, byOperator: Bool = false) {
        // A new schedule in the same state: the step it had is being taken.
        transition(incident, to: incident.phase)
        switch step {
        case .canary:
            guard let first = incident.first?.job ?? incident.durableJob else {
                // Nothing waits to be tried, and nothing said the cause is gone.
                resolveEmptied(incident)
                return
            }
            let now = clock.now()
            if incident.isolation, !byOperator, holdingIncident(for: first) != nil {
                // An incident of everyone's holds the job's scope: its own retry waits, and
                // counts nothing.
                execute(incident.policy.stepFinished(.failed(reason: "held", retryAfter: nil), at: now, using: &random), for: incident)
                return
            }
            creditSuccesses()
            // Priced by what the last run it repeats cost (a canary that failed after a minute
            // costs more than one refused at once).
            let price = budget.price(ofRetryAfterRun: incident.lastFailedRun)
            guard byOperator || !incident.policy.canaryDrawsOnBudget || budget.withdraw(at: now, price: price) else {
                let retryAt = budget.nextToken(after: now, price: price)
                schedule(.canary, at: retryAt, for: incident)
                emit(BusEvent(
                    kind: .budgetExhausted,
                    incident: incident.snapshot(at: now),
                    reason: "the retry budget is empty; the canary waits for a token",
                    delay: now.duration(to: retryAt)
                ))
                return
            }
            transition(incident, to: .canary)
            work.yield(.canary(incident.id, generation: incident.generation))
        case .probe:
            guard probe(for: incident.fingerprint.scope) != nil else {
                // Without a probe, one parked job tells whether the scope answers again.
                take(.canary, for: incident, byOperator: byOperator)
                return
            }
            transition(incident, to: .probing)
            let fingerprint = incident.fingerprint
            work.yield(.probe(incident.id, generation: incident.generation, scope: fingerprint.scope, kind: fingerprint.kind))
        case .reauthenticate:
            guard authenticator(for: incident.fingerprint.scope) != nil else {
                execute(.needsOperator(reason: "no authenticator is configured for realm \(incident.fingerprint.scope)"), for: incident)
                return
            }
            transition(incident, to: .reauthenticating)
            emit(BusEvent(kind: .reauthStarted, incident: incident.snapshot(at: clock.now())))
            work.yield(.reauthenticate(incident.id, generation: incident.generation, realm: incident.fingerprint.scope))
        case .close:
            resolve(incident, as: incident.recovered != nil ? .recovered : .closed)
        }
    }

    /// Feeds a step's result to the incident's policy and carries out its answer.
    func stepFinished(_ incident: IncidentRecord, _ result: StepResult) {
        execute(incident.policy.stepFinished(result, at: clock.now(), using: &random), for: incident)
    }

    /// A job released by the incident (or a new one) met its cause again: release stops.
    func releaseInterrupted(_ incident: IncidentRecord, by failure: Failure) {
        emit(BusEvent(kind: .releaseStopped, incident: incident.snapshot(at: clock.now()), reason: failure.text.message))
        execute(incident.policy.releaseInterrupted(by: failure, at: clock.now(), using: &random), for: incident)
    }

    /// Moves an incident to a state (``IncidentRecord/enter(_:next:keepingSchedule:)``), taking
    /// it into or out of the holds.
    func transition(
        _ incident: IncidentRecord,
        to phase: IncidentRecord.Phase,
        next: (step: PolicyStep, at: TimelineInstant)? = nil,
        keepingSchedule: Bool = false
    ) {
        switch incident.enter(phase, next: next, keepingSchedule: keepingSchedule) {
        case nil:
            break
        case .hold(let key):
            hold(key, by: incident)
        case .letGo(let key):
            holds[key]?.removeAll { $0 === incident }
            if holds[key]?.isEmpty == true {
                holds[key] = nil
                admission.withLock { $0.unhold(key, at: clock.now()) }
            }
        }
    }

    private func hold(_ key: HoldKey, by incident: IncidentRecord) {
        if holds[key] == nil {
            // The runs waiting for a slot of a held scope go to park.
            let turnedAway = admission.withLock { $0.hold(key, at: clock.now()) }
            for waiter in turnedAway { waiter.continuation.resume(returning: .ask) }
        }
        holds[key, default: []].append(incident)
    }

    /// Takes the first parked command out of an incident.
    func takeFirst(from incident: IncidentRecord) -> Command? {
        guard let command = incident.popFirst() else { return nil }
        parkedTotal -= 1
        return command
    }

    /// Ends an incident and records it in the history.
    func resolve(_ incident: IncidentRecord, as resolution: Resolution) {
        let now = clock.now()
        // A settled incident ended when its cause went away.
        let closed = resolution == .recovered ? incident.recovered ?? now : now
        transition(incident, to: .resolved(resolution, at: closed, date: clock.date(of: closed)))
        incidents[incident.id] = nil
        if openIncidents[incident.fingerprint] === incident {
            openIncidents[incident.fingerprint] = nil
        }
        if !incident.durable.isEmpty {
            // Whatever ended it, nothing of it holds them any more.
            let services = incident.durableServices
            incident.noneParkedDurably(services)
            work.yield(.releaseDurable(incident.id, services: services))
        }
        let snapshot = incident.snapshot(at: now)
        recentlyResolved.append(snapshot)
        while recentlyResolved.count > configuration.resolvedIncidentHistory { recentlyResolved.removeFirst() }
        logger.debug("incident resolved", metadata: ["incident": "\(incident.id)", "resolution": "\(resolution)"])
        emit(BusEvent(kind: .incidentResolved, incident: snapshot))
    }

    // MARK: - Canary

    nonisolated func runCanary(_ id: IncidentID, generation: UInt64) async {
        let (canary, expired, sources) = await takeCanary(id, generation: generation)
        for command in expired {
            await command.completion(.stopped(JobStopped(evaluation: .cancel, reason: .expired, incident: id)))
        }
        if let canary {
            await runHeld(canary, .canary(id))
            return
        }
        // Its jobs are parked with their owners: one of them runs one and records its verdict,
        // before anyone hears what that did to the incident.
        for (service, source) in sources {
            if let verdict = await source.runOne(parkedUnder: id, as: CanaryRun(bus: self, incident: id)) {
                await canaryEnded(id, verdict)
                return
            }
            await noneParked(id, generation: generation, service: service)
        }
    }

    /// Takes the incident's first parked job as its canary, passing over (and handing back) the
    /// jobs whose time ran out before their expiry was handled; or, when the bus holds none of
    /// its jobs, the sources of the durable queues that keep some.
    private func takeCanary(_ id: IncidentID, generation: UInt64) -> (Command?, expired: [Command], sources: [(String, any ParkedJobSource)]) {
        guard let incident = incidents[id], incident.generation == generation, incident.state == .canary else { return (nil, [], []) }
        var expired: [Command] = []
        let now = clock.now()
        while let command = takeFirst(from: incident) {
            if command.hasExpired(at: now) {
                expired.append(command)
                continue
            }
            return (command, expired, [])
        }
        let sources = durableSources(of: incident)
        if sources.isEmpty {
            // Its jobs were cancelled or expired meanwhile: nothing left to try.
            resolveEmptied(incident)
        }
        return (nil, expired, sources)
    }

    /// The sources of the durable queues with jobs parked under `incident`; those of services
    /// whose source is gone are forgotten (nothing can ask for their jobs).
    private func durableSources(of incident: IncidentRecord) -> [(String, any ParkedJobSource)] {
        var sources: [(String, any ParkedJobSource)] = []
        for service in incident.durableServices.sorted() {
            if let source = parkedJobSources[service] {
                sources.append((service, source))
            } else {
                logger.warning("no source of parked jobs for \(service): its jobs parked under incident \(incident.id) wait for its next start")
                incident.noneParkedDurably([service])
            }
        }
        return sources
    }

    /// The source of `service`'s durable queue has no job parked under the incident: when that
    /// leaves its canary nothing to try, it ends.
    private func noneParked(_ id: IncidentID, generation: UInt64, service: String) {
        guard let incident = incidents[id] else { return }
        incident.noneParkedDurably([service])
        if incident.generation == generation, incident.state == .canary, !incident.hasParked {
            resolveEmptied(incident)
        }
    }

    /// A canary from a durable queue came back with `verdict`, recorded by its owner.
    private func canaryEnded(_ id: IncidentID, _ verdict: Verdict) {
        switch verdict {
        case .succeeded: canarySucceeded(id)
        case .stopped(let stopped) where stopped.reason == .deadLettered: if let own = stopped.incident { gaveUp(own) }
        case .stopped, .parked, .retry: break
        }
    }

    /// Tells the owners of durable queues that the jobs parked under a resolved incident may go.
    nonisolated func releaseDurable(_ id: IncidentID, services: [String]) async {
        let sources = await parkedJobSources(of: services)
        await withDiscardingTaskGroup { group in
            for source in sources {
                group.addTask { await source.release(id) }
            }
        }
    }

    /// Ends an incident left with no job to try before anything said its cause was gone: an
    /// operator took its jobs (discarded), or they ended on their own (expired, replaced):
    /// closed. Never "recovered", which would say the cause went away.
    func resolveEmptied(_ incident: IncidentRecord) {
        resolve(incident, as: incident.emptiedByOperator ? .discarded : .closed)
    }

    func canarySucceeded(_ id: IncidentID) {
        guard let incident = incidents[id], incident.state == .canary else { return }
        incident.released += 1
        stepFinished(incident, .succeeded)
    }

    // MARK: - Probe

    nonisolated func runProbe(_ id: IncidentID, generation: UInt64, scope: String, kind: ErrorCategory.Kind) async {
        // The probe may have been taken away since the step was decided: the canary decides then.
        let result = await probe(for: scope)?.probe(scope, kind: kind) ?? .unsupported
        await probeFinished(id, generation: generation, result)
    }

    private func probeFinished(_ id: IncidentID, generation: UInt64, _ result: ProbeResult) {
        guard let incident = incidents[id], incident.generation == generation, incident.state == .probing else { return }
        switch result {
        case .reachable:
            stepFinished(incident, .succeeded)
        case .unreachable(let reason):
            incident.lastCheck = reason
            emit(BusEvent(kind: .probeFailed, incident: incident.snapshot(at: clock.now()), reason: reason))
            stepFinished(incident, .failed(reason: reason, retryAfter: nil))
        case .unsupported:
            if incident.fingerprint.kind == .fatal {
                execute(.hold, for: incident)
            } else {
                take(.canary, for: incident)
            }
        }
    }

    // MARK: - Re-authentication

    nonisolated func runReauthentication(_ id: IncidentID, generation: UInt64, realm: String) async {
        // The authenticator may have been taken away since the step was decided: an operator
        // must sign in then.
        let result = await authenticator(for: realm)?.reauthenticate(realm: realm)
            ?? .rejected(OperatorText(title: "No authenticator", message: "No authenticator is configured for realm \(realm) any more."))
        await reauthenticationFinished(id, generation: generation, result)
    }

    private func reauthenticationFinished(_ id: IncidentID, generation: UInt64, _ result: ReauthenticationResult) {
        guard let incident = incidents[id], incident.generation == generation, incident.state == .reauthenticating else {
            return
        }
        switch result {
        case .renewed:
            credentialsRenewedAt[incident.fingerprint.scope] = clock.now()
            stepFinished(incident, .succeeded)
        case .rejected(var text):
            if text.next == nil {
                text.next = "Fix the credentials, then retry the incident; its jobs stay parked until then."
            }
            incident.text = text
            stepFinished(incident, .rejected(reason: "\(text.title): \(text.message)"))
        case .unavailable(let reason):
            incident.lastCheck = reason
            stepFinished(incident, .failed(reason: reason, retryAfter: nil))
        }
    }

    // MARK: - Release

    /// The cause is gone: stop holding the scope and release every parked job, paced.
    func startRelease(_ incident: IncidentRecord) {
        transition(incident, to: .releasing(running: false))
        emit(BusEvent(kind: .releaseStarted, incident: incident.snapshot(at: clock.now())))
        if !incident.hasParked {
            if incident.fingerprint.kind == .invalid { resolve(incident, as: .closed) } else { recovered(incident) }
        } else {
            incident.isReleasing = true
            work.yield(.release(incident.id, generation: incident.generation))
        }
    }

    /// Arms the one timer of an incident's jobs waiting out a back-off for the soonest, unless
    /// one is armed as soon.
    func armDelayedWake(_ incident: IncidentRecord) {
        if let due = incident.delayedWake() { work.yield(.delayedDue(incident.id, deadline: due)) }
    }

    /// The back-off of some of an incident's jobs is over: they may run again, with its release
    /// (which starts if none runs) while it releases or paces, or when its next step says so.
    func delayedDue(_ id: IncidentID, armedFor deadline: TimelineInstant) {
        // A timer armed for a later instant than the one now armed was overtaken: the sooner one
        // moved everything due.
        guard let incident = incidents[id], incident.delayedWakeAt == deadline else { return }
        incident.delayedWakeAt = nil
        if incident.moveDue(at: clock.now()), incident.startsRelease() {
            work.yield(.release(incident.id, generation: incident.generation))
        }
        armDelayedWake(incident)
    }

    /// Runs an incident's parked jobs again, each after a random delay of up to
    /// ``ErrorBusConfiguration/Release/spread``. Each run takes a slot of its scope's
    /// concurrency limit, which starts slow now that the cause is gone; at most
    /// ``ErrorBusConfiguration/Concurrency/maximum`` released jobs are under way at once. The
    /// jobs kept in durable queues go back to their owners' queues at once, where admission
    /// paces them as new work. The release is over once every released job ran, the owners'
    /// included (``ParkedJobSource/release(_:)``).
    nonisolated func runRelease(_ id: IncidentID, generation: UInt64) async {
        let sources = await takeReleasedSources(id, generation: generation)
        await withDiscardingTaskGroup { group in
            for source in sources {
                group.addTask { await source.release(id) }
            }
            await runReleased(id, generation: generation)
        }
        await releaseFinished(id, generation: generation)
    }

    /// Runs the parked jobs the bus holds for a release under way.
    private nonisolated func runReleased(_ id: IncidentID, generation: UInt64) async {
        let concurrency = configuration.concurrency.maximum
        await withTaskGroup(of: Void.self) { group in
            var running = 0
            while !Task.isCancelled {
                if running >= concurrency {
                    await group.next()
                    running -= 1
                }
                guard let (command, delay) = await nextReleased(id, generation: generation) else { break }
                if delay > .zero {
                    try? await clock.sleep(clock.now().advanced(by: delay))
                }
                group.addTask { await self.runHeld(command, .released(id)) }
                running += 1
            }
        }
    }

    /// The sources of the durable queues a release under way asks to let its jobs go: those
    /// that keep jobs parked under it, or jobs it paced.
    private func takeReleasedSources(_ id: IncidentID, generation: UInt64) -> [any ParkedJobSource] {
        guard let incident = incidents[id], incident.generation == generation, incident.state.releases else { return [] }
        return parkedJobSources(of: incident.takeReleasedServices().sorted())
    }

    private func parkedJobSources(of services: [String]) -> [any ParkedJobSource] {
        services.compactMap { parkedJobSources[$0] }
    }

    /// The next job to release, with its start delay; `nil` once release is over or stopped.
    private func nextReleased(_ id: IncidentID, generation: UInt64) -> (Command, Duration)? {
        guard let incident = incidents[id], incident.generation == generation, incident.state.releases else {
            return nil
        }
        while let command = takeFirst(from: incident) {
            if let holder = holdingIncident(for: command.job, except: id) {
                // Another incident holds this job's scope now: it waits there instead. Taking it
                // out just made room, so parking it again cannot overflow, and the job's own
                // limits are not asked again (its expiry, if any, is already awaited).
                holder.append(command, failed: false)
                parkedTotal += 1
                continue
            }
            incident.released += 1
            let spread = configuration.release.spread
            let delay = spread > .zero ? spread * Double.random(in: 0...1, using: &random) : .zero
            return (command, delay)
        }
        return nil
    }

    private func releaseFinished(_ id: IncidentID, generation: UInt64) {
        guard let incident = incidents[id], incident.generation == generation, incident.state.releases else { return }
        if incident.isEmpty && incident.durableDue == nil {
            incident.isReleasing = false
            recovered(incident)
        } else if incident.hasReady {
            work.yield(.release(id, generation: generation))
        } else {
            // Only jobs waiting out a back-off are left, here or in their owners' queues: the
            // next of them due starts the next release.
            incident.isReleasing = false
        }
    }

    /// Its cause is gone and its jobs released: it resolves, after the settle window if there is
    /// one (an incident of one job resolves at once: its job succeeded).
    private func recovered(_ incident: IncidentRecord) {
        let window = configuration.settleWindow
        guard window > .zero, !incident.isolation else {
            resolve(incident, as: .recovered)
            return
        }
        let now = clock.now()
        let deadline = now.advanced(by: window)
        transition(incident, to: .settling(since: now), next: (.close, deadline))
        work.yield(.timer(incident.id, generation: incident.generation, deadline: deadline))
    }

    // MARK: - Retry budget

    /// Arms a wake-up for when the budget has the tokens for the first waiting retry.
    func scheduleBudgetWake(after now: TimelineInstant) {
        let wakeAt = budget.nextToken(after: now, price: budgetWaiters.first.map { budget.price(ofRetryAfterRun: $0.lastRun) } ?? 1)
        if let armed = budgetWakeAt, armed <= wakeAt { return }
        budgetWakeAt = wakeAt
        work.yield(.budgetTimer(deadline: wakeAt))
        emit(BusEvent(
            kind: .budgetExhausted,
            reason: "the retry budget is empty; \(budgetWaiters.count) retries wait for tokens",
            delay: now.duration(to: wakeAt)
        ))
    }

    nonisolated func budgetTimerFired() async {
        let commands = await takeBudgetWaiters()
        await withDiscardingTaskGroup { group in
            for command in commands {
                group.addTask { await self.runHeld(command, .retry) }
            }
        }
    }

    /// The waiting retries the budget now has tokens for.
    private func takeBudgetWaiters() -> [Command] {
        budgetWakeAt = nil
        creditSuccesses()
        let now = clock.now()
        var ready: [Command] = []
        while let first = budgetWaiters.first, budget.withdraw(at: now, price: budget.price(ofRetryAfterRun: first.lastRun)) {
            ready.append(budgetWaiters.removeFirst())
        }
        if !budgetWaiters.isEmpty { scheduleBudgetWake(after: now) }
        return ready
    }

    /// Removes a command whose caller stopped waiting for it.
    func withdraw(serial: UInt64) {
        _ = takeHeld(serials: [serial])
    }

    /// Takes the commands the bus holds among `serials` out of their holds (one pass over the
    /// held commands), with the incident each was parked under.
    func takeHeld(serials: Set<UInt64>) -> ([Command], [UInt64: IncidentID?]) {
        var taken: [Command] = []
        var incidentOf: [UInt64: IncidentID?] = [:]
        if !budgetWaiters.isEmpty {
            budgetWaiters.removeAll { command in
                guard serials.contains(command.serial) else { return false }
                taken.append(command)
                incidentOf[command.serial] = .some(nil)
                return true
            }
        }
        for incident in incidents.values where taken.count < serials.count {
            let removed = incident.remove { serials.contains($0.serial) }
            parkedTotal -= removed.count
            for command in removed {
                taken.append(command)
                incidentOf[command.serial] = incident.id
            }
        }
        return (taken, incidentOf)
    }
}
