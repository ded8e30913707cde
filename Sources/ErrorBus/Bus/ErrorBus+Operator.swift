import DequeModule
import HeapModule
import Synchronization

extension ErrorBus {
    // MARK: - Operator actions

    /// Takes the incident's next step now: a canary (outside the retry budget), a probe, a new
    /// sign-in; resumes a paused service; closes an `invalid` incident. Does nothing while a step
    /// or a release is already under way.
    public func retry(incident id: IncidentID) throws(ErrorBusError) {
        guard let incident = incidents[id] else { throw .noSuchIncident(id) }
        switch incident.state {
        case .pacing:
            // Its jobs waiting out a back-off go now, at the scope's pace.
            if incident.moveDue(at: nil), incident.startsRelease() {
                work.yield(.release(incident.id, generation: incident.generation))
            }
        case .releasing, .canary, .probing, .reauthenticating:
            return
        default:
            execute(incident.policy.operatorRetry(), for: incident, byOperator: true)
        }
    }

    /// Gives up an incident: every job parked under it stops with ``JobStopped/Reason/discarded``
    /// and the incident resolves.
    ///
    /// - Returns: How many jobs were discarded.
    @discardableResult
    public nonisolated func discard(incident id: IncidentID) async throws(ErrorBusError) -> Int {
        let commands = try await takeAll(from: id)
        let stopped = JobStopped(evaluation: .cancel, reason: .discarded, incident: id)
        for command in commands { await command.completion(.stopped(stopped)) }
        return commands.count
    }

    private func takeAll(from id: IncidentID) throws(ErrorBusError) -> [Command] {
        guard let incident = incidents[id] else { throw .noSuchIncident(id) }
        let commands = incident.removeAll()
        parkedTotal -= commands.count
        resolve(incident, as: .discarded)
        return commands
    }

    /// Runs a held job's next attempt now. A job parked under an incident goes when its
    /// incident does: the incident takes its next step now (``retry(incident:)``). A retry
    /// waiting for the retry budget runs at once, outside the budget.
    ///
    /// - Returns: The incident the job is parked under, or `nil` for a retry that was waiting
    ///   for the budget.
    @discardableResult
    public func retry(job id: String, service: String) throws(ErrorBusError) -> IncidentID? {
        guard let held = heldJob(id: id, service: service) else { throw .noSuchJob(service: service, id: id) }
        if let incident = held.incident {
            try retry(incident: incident)
            return incident
        }
        work.yield(.retryNow(job: held.job))
        return nil
    }

    /// Takes a retry that waits for the budget out of the queue, for ``retry(job:service:)``.
    func takeBudgetWaiter(_ job: Job) -> Command? {
        guard let index = budgetWaiters.firstIndex(where: { $0.job == job }) else { return nil }
        return budgetWaiters.remove(at: index)
    }

    /// Stops a job with ``JobStopped/Reason/cancelledByOperator``: at once if the bus holds it
    /// (parked, or waiting for the retry budget); when its run ends if it is running (a run that
    /// succeeds stands, and its failure counts into its incident as any other).
    ///
    /// The way to cancel a job handed to ``submit(_:operation:completion:)``: its completion is
    /// given the outcome. (A ``perform(_:operation:)`` is cancelled with its caller's task.)
    ///
    /// - Returns: When the job stops.
    /// - Throws: ``ErrorBusError/noSuchJob(service:id:)`` when the bus neither holds nor runs it.
    @discardableResult
    public nonisolated func cancel(job id: String, service: String) async throws(ErrorBusError) -> Cancellation {
        let taken: (Command, IncidentID?)
        do {
            taken = try await takeParked(job: id, service: service, byOperator: true)
        } catch {
            if running.withLock({ $0.cancel(service: service, id: id) }) { return .whenRunEnds }
            throw error
        }
        let stopped = JobStopped(evaluation: .cancel, reason: .cancelledByOperator, incident: taken.1)
        await taken.0.completion(.stopped(stopped))
        return .stopped
    }

    /// When a job ``cancel(job:service:)`` asked to stop does.
    public enum Cancellation: Sendable, Hashable {
        /// It was held, and stopped at once.
        case stopped
        /// It is running: it stops when this run ends, unless the run succeeds.
        case whenRunEnds
    }

    /// Stops one held job (parked, or waiting for the retry budget) as a dead letter for
    /// `failure`: its owner sets it aside for a reason of its own (a limit on how much may wait,
    /// say) instead of letting it wait for its incident. Its completion is given
    /// ``JobStopped/Reason/deadLettered`` with `failure`, as a rejected job's is.
    public nonisolated func deadLetter(job id: String, service: String, failure: Failure) async throws(ErrorBusError) {
        let (command, incident) = try await takeParked(job: id, service: service, deadLetter: failure)
        let stopped = JobStopped(evaluation: .cancel, reason: .deadLettered, failure: failure, incident: incident)
        await command.completion(.stopped(stopped))
    }

    /// Takes one held job out of the bus: for an operator (`byOperator`), or for its owner to
    /// set aside as a dead letter for `deadLetter` (counted into its incident, as the dead letters
    /// the bus makes are).
    private func takeParked(job id: String, service: String, byOperator: Bool = false, deadLetter failure: Failure? = nil) throws(ErrorBusError) -> (Command, IncidentID?) {
        let matches: (Command) -> Bool = { $0.job.id == id && $0.job.service == service }
        if let index = budgetWaiters.firstIndex(where: matches) {
            return (budgetWaiters.remove(at: index), nil)
        }
        for incident in incidents.values {
            if let command = incident.remove(where: matches).first {
                parkedTotal -= 1
                if byOperator { incident.emptiedByOperator = true }
                if let failure { _ = deadLetter(command, failure, in: incident) }
                // The incident of one job has nothing left to retry.
                if incident.isolation && incident.isEmpty { resolveEmptied(incident) }
                return (command, incident.id)
            }
        }
        throw .noSuchJob(service: service, id: id)
    }

    /// Pauses a service: its new jobs park until ``resume(_:)``. An operator pause is a `fatal`
    /// incident whose cause is `pausedByOperator`.
    ///
    /// - Returns: The incident that holds the service.
    @discardableResult
    public func pause(_ service: String) -> IncidentID {
        let failure = Failure(
            category: .fatal,
            scope: service,
            cause: Self.operatorPauseCause,
            service: service,
            text: OperatorText(
                title: "Paused by operator",
                message: "\(service) was paused by an operator.",
                next: "Its work waits until the service is resumed."
            )
        )
        if let existing = openIncidents[failure.fingerprint] { return existing.id }
        return open(failure, parking: nil, policy: .paused(nil)).id
    }

    /// The cause of the `fatal` incident ``pause(_:)`` opens, which tells an operator's pause
    /// apart from a service that stopped on its own.
    public static let operatorPauseCause = "pausedByOperator"

    /// Resumes a service: every `fatal` incident holding it releases its jobs.
    ///
    /// - Returns: How many incidents were resumed.
    @discardableResult
    public func resume(_ service: String) -> Int {
        let paused = incidents.values
            .filter { $0.fingerprint.kind == .fatal && $0.fingerprint.scope == service && $0.state != .releasing }
            .sorted { $0.id < $1.id }
        for incident in paused { startRelease(incident) }
        return paused.count
    }

    // MARK: - Signals from the host

    /// The host's network changed (a link, address or route): every waiting reachability gate
    /// probes soon, within ``ErrorBusConfiguration/Reachability/networkChangeSpread``, instead of
    /// at its next interval; never later than that.
    public func networkChanged() {
        let now = clock.now()
        for incident in incidents.values.sorted(by: { $0.id < $1.id }) where incident.state == .waiting {
            guard let action = incident.policy.networkChanged(at: now, using: &random) else { continue }
            if case .wait(let deadline, _) = action, let next = incident.next, next.at <= deadline { continue }
            execute(action, for: incident)
        }
    }

    /// New credentials for `realm` are in place (e.g. the auth service refreshed its token after
    /// an operator fixed the secret): incidents of that realm waiting for a sign-in release their
    /// jobs.
    public func credentialsRenewed(realm: String) {
        credentialsRenewedAt[realm] = clock.now()
        let waiting = incidents.values
            .filter {
                $0.fingerprint.kind == .unauthenticated && $0.fingerprint.scope == realm
                    && ($0.state == .waiting || $0.state == .needsOperator)
            }
            .sorted { $0.id < $1.id }
        for incident in waiting { startRelease(incident) }
    }

    // MARK: - Responders

    /// Connects a responder to a service's chain. The last connected answers first.
    @discardableResult
    public func connect(_ responder: some ErrorResponder, to service: String) -> ResponderConnection {
        nextResponderID += 1
        responders[service, default: []].append((nextResponderID, responder))
        return ResponderConnection(service: service, id: nextResponderID)
    }

    /// Disconnects a responder.
    public func disconnect(_ connection: ResponderConnection) {
        responders[connection.service]?.removeAll { $0.id == connection.id }
        if responders[connection.service]?.isEmpty == true { responders[connection.service] = nil }
    }

    // MARK: - Observation

    /// The bus's state for a status display.
    public func snapshot() -> BusSnapshot {
        let now = clock.now()
        let open = incidents.values.sorted { $0.id < $1.id }
        var parkedByService: [String: [ErrorCategory.Kind: Int]] = [:]
        var heldByService: [String: Int] = [:]
        for incident in open {
            for (service, count) in incident.parkedByService {
                parkedByService[service, default: [:]][incident.fingerprint.kind, default: 0] += count
                heldByService[service, default: 0] += count
            }
        }
        for command in budgetWaiters { heldByService[command.job.service, default: 0] += 1 }
        creditSuccesses()
        return BusSnapshot(
            incidents: open.map { $0.snapshot(at: now) },
            recentlyResolved: Array(recentlyResolved),
            parkedJobs: parkedTotal,
            parkedByService: parkedByService,
            waitingForBudget: budgetWaiters.count,
            heldByService: heldByService,
            retryBudgetTokens: budget.tokens,
            overflowedJobs: overflowCount,
            concurrency: admission.withLock { $0.limits(at: now) },
            refusals: admission.withLock { $0.refusals },
            isRunning: lifecycle == .running
        )
    }

    /// One open or recently resolved incident.
    public func incident(_ id: IncidentID) throws(ErrorBusError) -> IncidentSnapshot {
        if let incident = incidents[id] { return incident.snapshot(at: clock.now()) }
        if let resolved = recentlyResolved.last(where: { $0.id == id }) { return resolved }
        throw .noSuchIncident(id)
    }

    /// The open incident that holds back jobs like `job` (its scope, realm or service), the
    /// oldest if several do; `nil` when none does. Jobs a failure of their own holds are not
    /// asked about: their incident holds no one else.
    public func holdingIncident(of job: Job) -> IncidentID? {
        holdingIncident(for: job)?.id
    }

    /// The jobs parked under an open incident, in release order.
    public func parkedJobs(in id: IncidentID) throws(ErrorBusError) -> [Job] {
        guard let incident = incidents[id] else { throw .noSuchIncident(id) }
        return incident.parked.map(\.job)
    }

    /// Every job the bus holds, optionally of one service: the retries waiting for the retry
    /// budget (oldest first), then the jobs parked under each open incident (oldest incident
    /// first, each in release order).
    ///
    /// Walks every held job: meant for an operator's question, not for every job a service runs.
    public func heldJobs(service: String? = nil) -> [HeldJob] {
        var held: [HeldJob] = []
        for command in budgetWaiters where service == nil || command.job.service == service {
            held.append(HeldJob(job: command.job, incident: nil, runs: command.failedRuns))
        }
        for incident in incidents.values.sorted(by: { $0.id < $1.id }) {
            if let service, incident.parkedByService[service] == nil { continue }
            for command in incident.waiting where service == nil || command.job.service == service {
                held.append(HeldJob(job: command.job, incident: incident.id, hasFailed: incident.isolation, runs: command.failedRuns))
            }
            for command in incident.failed where service == nil || command.job.service == service {
                held.append(HeldJob(job: command.job, incident: incident.id, hasFailed: true, runs: command.failedRuns))
            }
            for entry in incident.delayed.unordered.sorted() where service == nil || entry.command.job.service == service {
                held.append(HeldJob(job: entry.command.job, incident: incident.id, hasFailed: true, runs: entry.command.failedRuns))
            }
        }
        return held
    }

    /// Where the bus holds one job, or `nil` when it does not hold it: running, finished, or
    /// never submitted.
    public func heldJob(id: String, service: String) -> HeldJob? {
        let matches: (Command) -> Bool = { $0.job.id == id && $0.job.service == service }
        if let command = budgetWaiters.first(where: matches) {
            return HeldJob(job: command.job, incident: nil, runs: command.failedRuns)
        }
        for incident in incidents.values where incident.parkedByService[service] != nil {
            if let command = incident.waiting.first(where: matches) {
                return HeldJob(job: command.job, incident: incident.id, hasFailed: incident.isolation, runs: command.failedRuns)
            }
            if let command = incident.failed.first(where: matches) ?? incident.delayed.unordered.first(where: { matches($0.command) })?.command {
                return HeldJob(job: command.job, incident: incident.id, hasFailed: true, runs: command.failedRuns)
            }
        }
        return nil
    }

    /// Subscribes to the bus's events. The subscription starts with a snapshot taken at the same
    /// moment, so that nothing between the snapshot and the first event is missed.
    ///
    /// What a subscriber can rely on:
    /// - an incident's ``BusEvent/Kind/incidentOpened`` comes before every other event of that
    ///   incident, including the parking or dead letter of the job whose failure opened it;
    /// - ``BusEvent/Kind/incidentResolved`` comes after the caller of the incident's canary has
    ///   been given its result (a `perform` returned, a `submit` completion called), so a subscriber
    ///   that acts on the resolution, cancelling that caller say, cannot change that result.
    ///
    /// The subscription's events end when the bus stops (at once, for one made after it stopped).
    ///
    /// - Parameter bufferSize: Events the subscriber may fall behind before losing the oldest;
    ///   ``ErrorBusConfiguration/eventBufferSize`` by default.
    public func subscribe(bufferSize: Int? = nil) -> EventSubscription {
        broadcaster.subscribe(bufferSize: bufferSize ?? configuration.eventBufferSize, snapshot: snapshot())
    }

    /// Whether the bus's ``run()`` is running. Answering at all shows the actor is not wedged,
    /// which is what a watchdog wants to know.
    public var isRunning: Bool { lifecycle == .running }
}
