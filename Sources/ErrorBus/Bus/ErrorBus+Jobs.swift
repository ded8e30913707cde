import ErrorBusUnits
import HeapModule
import Logging
import Synchronization

extension ErrorBus {
    /// Runs `operation` for `job` through the bus and waits for its final outcome.
    ///
    /// The operation runs at once in the caller's task, unless an open incident holds the job's
    /// scope, realm or service: then the job parks without running. When the operation fails,
    /// the failure is categorised, offered to the service's responders, and otherwise joins or
    /// opens an incident, under which the job parks until the incident's policy releases it.
    /// A released job runs again on the bus's tasks, and its value comes back here.
    ///
    /// Each waiting call keeps its task suspended. For bulk work (thousands of queued jobs),
    /// ``submit(_:operation:completion:)`` parks jobs without holding a task for each.
    ///
    /// - Returns: The operation's value, from the first run or a later one.
    /// - Throws: ``JobStopped`` when the job ends without success: dead-lettered, handled by a
    ///   responder (with its evaluation), discarded or cancelled by an operator, refused because
    ///   parking is full, or cancelled with the caller's task. The operation may already have run
    ///   when the caller's task is cancelled while the job is being released.
    public nonisolated func perform<Value: Sendable>(
        _ job: Job,
        operation: @escaping @Sendable () async throws -> Value
    ) async throws(JobStopped) -> Value {
        let value = ValueBox<Value>()
        let outcome = OneShot<JobOutcome>()
        let command = Command(
            serial: nextSerial(),
            job: job,
            submittedAt: clock.now(),
            operation: { value.store(try await operation()) },
            completion: { outcome.fulfill($0) }
        )
        switch await submit(command) {
        case .completed:
            // Stored by the operation that just succeeded in this task.
            return value.take()!
        case .stopped(let stopped):
            throw stopped
        case .parked:
            let final = await withTaskCancellationHandler {
                await outcome.value
            } onCancel: {
                outcome.fulfill(.stopped(JobStopped(evaluation: .cancel, reason: .taskCancelled)))
                work.yield(.withdraw(serial: command.serial))
            }
            switch final {
            case .succeeded:
                guard let result = value.take() else {
                    // The caller was cancelled while the released job succeeded.
                    throw JobStopped(evaluation: .cancel, reason: .taskCancelled)
                }
                return result
            case .stopped(let stopped):
                throw stopped
            }
        }
    }

    /// Hands `job` to the bus: runs it now unless its scope is held, and parks it on failure,
    /// without holding the caller's task while it is parked.
    ///
    /// Returns once the first run finished or the job parked. When the bus holds the job
    /// (``Submission/parked(_:)``), `completion` is called exactly once, later, with its final
    /// outcome; otherwise it is not called.
    public nonisolated func submit(
        _ job: Job,
        operation: @escaping @Sendable () async throws -> Void,
        completion: @escaping @Sendable (JobOutcome) async -> Void
    ) async -> Submission {
        await submit(Command(serial: nextSerial(), job: job, submittedAt: clock.now(), operation: operation, completion: completion))
    }

    /// Runs `job` once for an owner that keeps its jobs in a durable queue of its own, and says
    /// what to do with it: the bus holds nothing of the job afterwards, whatever the verdict.
    ///
    /// The operation runs at once in the caller's task (taking a slot of its scope's concurrency
    /// limit, waiting for one if need be), unless an open incident holds the job's scope, realm
    /// or service: then it does not run, and the verdict parks it under that incident
    /// (`failed: false`). A failure is categorised, offered to the service's responders, and
    /// otherwise joins or opens an incident, as for ``perform(_:operation:)``; the verdict says
    /// where the job waits. The owner records the verdict, and keeps a parked job until the
    /// incident asks for it through the ``ParkedJobSource`` registered for the job's service
    /// (``setParkedJobSource(_:forService:)``).
    ///
    /// Parked jobs of such an owner cost the bus no memory, however many there are. The job's
    /// own limits (``Job/maxAttempts``, ``Job/expiresAfter``) apply to this run only: across runs
    /// they are the owner's to keep.
    public nonisolated func run(_ job: Job, operation: @escaping @Sendable () async throws -> Void) async -> Verdict {
        if let refused = refusal(of: job) { return .stopped(refused) }
        return await run(durableCommand(job, operation: operation), .first)
    }

    /// Reports a failure that has nothing to re-run: it is offered to the service's responders,
    /// then joins or opens an incident, whose policy runs as for any other failure.
    ///
    /// - Returns: The incident the failure belongs to, or `nil` when a responder handled it.
    @discardableResult
    public func report(_ failure: Failure) -> IncidentID? {
        guard case .unhandled(let failure) = respond(to: failure, job: nil) else { return nil }
        if let incident = openIncidents[failure.fingerprint] {
            join(incident, failure)
            return incident.id
        }
        guard lifecycle != .stopped else { return nil }
        return open(failure, parking: nil).id
    }

    /// Holds back new runs of `scope` for `delay`, because its server said the client's quota is
    /// spent (a `RateLimit` field with nothing remaining, an `X-RateLimit-Reset`): pacing before
    /// the limit is hit rather than meeting `429`s. Runs under way go on; no incident opens; a
    /// longer pause already asked for stays.
    public nonisolated func pace(scope: String, for delay: Duration) {
        guard delay > .zero else { return }
        let deadline = clock.now().advanced(by: delay)
        admission.withLock { $0.pause(scope, until: deadline) }
        work.yield(.paceTimer(scope: scope, deadline: deadline))
    }

    /// What the server of `job`'s scope said of the client's quota with an answer (a `RateLimit`,
    /// `RateLimit-Policy` or `X-RateLimit-*` field): `remaining` requests until it resets after
    /// `reset`.
    ///
    /// The scope's rate is capped at this client's share of what remains, spread over the time
    /// left (``AdaptiveRate``): a quota is spent evenly over its window, not at its start, and a
    /// fleet sharing one quota spends it evenly together. With nothing left, nothing of the scope
    /// starts before the reset, and an incident of the job's service says so (`rateLimited`,
    /// cause ``quotaSpentCause``), holding its work until then: the server's own word that it is
    /// pacing is told, not kept silent. Runs under way go on.
    public nonisolated func quota(remaining: Int, reset: Duration, for job: Job) {
        guard reset > .zero, remaining >= 0 else { return }
        let now = clock.now()
        admission.withLock { admission in
            admission.quota(job.scope, remaining: remaining, reset: reset, at: now)
            if remaining == 0 { admission.pause(job.scope, until: now.advanced(by: reset)) }
        }
        if remaining == 0 {
            work.yield(.paceTimer(scope: job.scope, deadline: now.advanced(by: reset)))
            work.yield(.quotaSpent(job, reset: reset))
        }
    }

    /// The cause of the incident a spent quota opens (``quota(remaining:reset:for:)``).
    public static let quotaSpentCause = "quotaSpent"

    /// Opens (or joins) the incident that tells that `job`'s scope has no quota left until its
    /// reset.
    func quotaSpent(_ job: Job, reset: Duration) {
        let failure = Failure(
            category: .rateLimited(retryAfter: reset),
            scope: job.defaultScope(for: .rateLimited),
            cause: Self.quotaSpentCause,
            service: job.service,
            text: OperatorText(
                title: "Quota spent",
                message: "\(job.scope) said no request of its quota remains until it resets in \(DurationText.format(reset)).",
                next: "\(job.service) waits for the reset; nothing is lost. If this recurs, ask for a larger quota or send less."
            )
        )
        report(failure)
    }

    /// Whether an open incident (or the bus's stop) holds back jobs like `job` now: submitted, it
    /// would park without running. Answered without a hop to the actor, for a service that
    /// keeps its queue durably: while this is true it need not hand the bus more work to hold,
    /// and leaves it where it is kept, until an ``BusEvent/Kind/incidentResolved`` event.
    public nonisolated func holdsBack(_ job: Job) -> Bool {
        !admission.withLock { $0.mayRun(job) }
    }

    /// Tells the bus that the owner of `job`'s durable queue parked jobs like it under
    /// `incident` without running them: jobs the incident held back (``holdsBack(_:)``,
    /// ``holdingIncident(of:)``), moved under it in the owner's queue. The bus then asks the
    /// owner's ``ParkedJobSource`` for them, one at a time as the incident's canary and all at
    /// once when it ends.
    ///
    /// Call it after the jobs are parked. It returns `false` when `incident` no longer holds
    /// such jobs back: it may have released its parked jobs before these were parked, and the
    /// owner releases them itself.
    public func parkedHeldBack(_ job: Job, under incident: IncidentID) -> Bool {
        guard let holder = holdingIncident(for: job), holder.id == incident else { return false }
        holder.parkedDurably(job)
        return true
    }

    /// The failure an error describes for `job`: its own category when it is a
    /// ``CategorizedError``, the configured fallback otherwise.
    public nonisolated func categorize(_ error: any Error, for job: Job) -> Failure {
        if let categorized = error as? any CategorizedError {
            return Failure(categorized, job: job)
        }
        return fallback(error, job)
    }

    // MARK: - Internals

    /// Where a run of a command comes from.
    enum AttemptContext: Sendable, Equatable {
        /// Its first run, in the submitter's task.
        case first
        /// The canary of an incident.
        case canary(IncidentID)
        /// Released by an incident.
        case released(IncidentID)
        /// A retry a responder asked for.
        case retry

        /// The incident that runs it (as its canary or released), if any.
        var incident: IncidentID? {
            switch self {
            case .canary(let id), .released(let id): id
            case .first, .retry: nil
            }
        }

        /// The context of a run that a `retry` evaluation repeats at once.
        var retried: AttemptContext {
            if case .first = self { .retry } else { self }
        }

        /// Whether the run takes a slot of its scope's concurrency limit: all but a canary,
        /// which runs alone while its incident holds the scope.
        var takesSlot: Bool {
            if case .canary = self { false } else { true }
        }
    }

    /// What becomes of a failed run.
    enum FailureDecision {
        case parked(IncidentID?)
        case stopped(JobStopped)
        case retryNow
        /// A job of a durable queue runs again after this long (``Verdict/retry(after:)``).
        case retryLater(Duration)
    }

    /// What a run (or the runs a responder's retries add) came to.
    enum RunResult {
        case completed(latency: Duration)
        case stopped(JobStopped)
        /// Parked under an incident, or held for the retry budget (`nil`); `failed`: it ran and
        /// failed, as opposed to being held back before it ran.
        case parked(IncidentID?, failed: Bool)
        case retryLater(Duration)
    }

    enum ResponderDecision {
        case unhandled(Failure)
        case handled(Evaluation, Failure)
    }

    nonisolated func nextSerial() -> UInt64 {
        serials.add(1, ordering: .relaxed).newValue
    }

    nonisolated func submit(_ command: Command) async -> Submission {
        if let refused = refusal(of: command.job) { return .stopped(refused) }
        switch await attempt(command, .first) {
        case .completed: return .completed
        case .stopped(let stopped): return .stopped(stopped)
        case .parked(let id, _): return .parked(id)
        case .retryLater:
            // Only a job of a durable queue is told to come back later.
            preconditionFailure("a command the bus holds was told to retry later")
        }
    }

    /// A command of a durable queue's job (``run(_:operation:)``): never held by the bus.
    nonisolated func durableCommand(_ job: Job, operation: @escaping @Sendable () async throws -> Void) -> Command {
        var command = Command(serial: nextSerial(), job: job, submittedAt: clock.now(), operation: operation, completion: { _ in })
        command.durable = true
        durableFailures.withLock { $0.restore(&command) }
        return command
    }

    /// Runs a command of a durable queue, as its first run or its incident's canary, and says
    /// where it waits.
    nonisolated func run(_ command: Command, _ context: AttemptContext) async -> Verdict {
        switch await attempt(command, context) {
        case .completed(let latency):
            durableFailures.withLock { $0.forget(command.job) }
            return .succeeded(latency: latency)
        case .stopped(let stopped):
            durableFailures.withLock { $0.forget(command.job) }
            return .stopped(stopped)
        case .parked(let id?, let failed): return .parked(id, failed: failed)
        case .parked(nil, _): preconditionFailure("a durable queue's job was held for the retry budget")
        case .retryLater(let delay): return .retry(after: delay)
        }
    }

    /// Why the bus refuses to run `job` at all, if it does.
    nonisolated func refusal(of job: Job) -> JobStopped? {
        if let limit = job.maxAttempts, limit < 1 {
            let failure = Failure(
                category: .invalid(reason: "maxAttempts below 1"),
                scope: job.scope,
                cause: "maxAttemptsBelowOne",
                service: job.service,
                text: OperatorText(
                    title: "Job refused",
                    message: "\(job.shownName) may run \(limit) times (Job.maxAttempts): it was not run.",
                    next: "Give it a maxAttempts of at least 1, or nil for no limit."
                )
            )
            return JobStopped(evaluation: .cancel, reason: .attemptsExhausted, failure: failure)
        }
        return nil
    }

    enum AdmissionDecision {
        case run
        case parked(IncidentID)
        case stopped(JobStopped)
    }

    /// Lets a command run, or parks it under the incident holding its scope.
    func admit(_ command: Command) -> AdmissionDecision {
        guard lifecycle != .stopped else {
            return .stopped(JobStopped(evaluation: .cancel, reason: .shutdown))
        }
        guard let holder = holdingIncident(for: command.job) else { return .run }
        switch park(command, in: holder, failed: false, failure: nil) {
        case .parked(let id?): return .parked(id)
        case .stopped(let stopped): return .stopped(stopped)
        case .parked(nil), .retryNow, .retryLater: return .run
        }
    }

    /// The oldest open incident that holds back this job, if any.
    func holdingIncident(for job: Job, except excluded: IncidentID? = nil) -> IncidentRecord? {
        guard !holds.isEmpty else { return nil }
        func holder(_ key: HoldKey) -> IncidentRecord? {
            holds[key]?.first { $0.id != excluded }
        }
        if let scope = holder(.scope(job.scope)) { return scope }
        if let service = holder(.serviceAtScope(service: job.service, scope: job.scope)) { return service }
        if let service = holder(.service(job.service)) { return service }
        if let realm = job.realm { return holder(.realm(realm)) }
        return nil
    }

    /// Runs a command once (again, if a responder asks for a retry the budget allows).
    ///
    /// Every run but a canary first takes a slot of its scope's concurrency limit, waiting for
    /// one if need be, or parks when an incident holds the job back. The slot is given back with
    /// what the run says of the scope's load: its latency, or whether its failure was
    /// back-pressure.
    nonisolated func attempt(_ command: Command, _ context: AttemptContext) async -> RunResult {
        var context = context
        // Whether a failed run was already retried at once (a responder's retry, or one with
        // renewed credentials): a refusal counts as refusing renewed credentials only once.
        var retried = false
        while true {
            let takesSlot = context.takesSlot
            if takesSlot {
                switch await slot(for: command, retry: context != .first) {
                case .granted:
                    // Checked once the slot is had, which may have taken a while. (A canary
                    // takes none: its incident checked it when it took it, and must hear how
                    // its run went.)
                    if command.hasExpired(at: clock.now()) {
                        let now = clock.now()
                        releaseSlot(command.job, Admission.Ending(outcome: .other, startedAt: now, fresh: false, counts: false, teaches: false), at: now)
                        return .stopped(JobStopped(evaluation: .cancel, reason: .expired))
                    }
                case .cancelled:
                    return .stopped(JobStopped(evaluation: .cancel, reason: .taskCancelled))
                case .expired:
                    return .stopped(JobStopped(evaluation: .cancel, reason: .expired))
                case .ask:
                    switch await admit(command) {
                    case .run: continue
                    case .parked(let id): return .parked(id, failed: false)
                    case .stopped(let stopped): return .stopped(stopped)
                    }
                }
            }
            let started = clock.now()
            // Whether another job of its scope succeeds while this run is under way.
            let successesBefore = admission.withLock { $0.outcomes(of: command.job.service, at: command.job.scope).successes }
            command.limits?.runs.add(1, ordering: .relaxed)
            let underWay = running.withLock { $0.start(command.job) }
            let slot = takesSlot ? RunSlot(bus: self, job: command.job) : nil
            do {
                try await Self.$runSlot.withValue(slot) { try await run(command) }
                // A run that succeeded stands, whoever asked to cancel it meanwhile.
                _ = running.withLock { $0.finish(underWay) }
                let now = clock.now()
                let latency = started.duration(to: now)
                if let slot {
                    releaseSlot(command.job, ending(command, .success(latency: latency), startedAt: started, lent: slot.giveBack()), at: now)
                } else {
                    admission.withLock { $0.calibrate(command.job, with: latency, fresh: command.isFresh, counts: command.counts, suspected: command.suspectedFreshRun) }
                }
                pendingSuccesses.add(1, ordering: .relaxed)
                return .completed(latency: latency)
            } catch {
                let decision = await failed(command, error, context, startedAt: started, successesBefore: successesBefore, retried: retried)
                // Given back once the failure is routed: runs waiting for the slot find the
                // incident it opened holding the scope, and park.
                if let slot { releaseSlot(command.job, ending(command, Self.load(signalledBy: error), startedAt: started, lent: slot.giveBack()), at: clock.now()) }
                if running.withLock({ $0.finish(underWay) }) {
                    // Cancelled while it ran: its failure counted, and it ends here.
                    return await stopCancelled(command, after: decision, context)
                }
                switch decision {
                case .parked(let id): return .parked(id, failed: true)
                case .stopped(let stopped): return .stopped(stopped)
                case .retryLater(let delay): return .retryLater(delay)
                case .retryNow:
                    retried = true
                    context = context.retried
                }
            }
        }
    }

    /// Runs a command's operation once, within ``ErrorBusConfiguration/attemptTimeout``: in a
    /// task of its own, which the deadline cancels (``AttemptDeadlines``, one timer for every
    /// run), awaited here and cancelled with the caller's. The first of the run and its deadline
    /// to end decides.
    private nonisolated func run(_ command: Command) async throws {
        guard let limit = configuration.attemptTimeout else { return try await command.operation() }
        let race = AttemptRace()
        let operation = command.operation
        // Unstructured, and stored: the deadline cancels the run from the timer's task, which
        // needs a handle to it, and a task group's child gives none (a group with a sleeping
        // child beside the run did the same at 7–10 µs a run). It is still scoped to this call:
        // awaited below, and cancelled with the caller or by the deadline.
        let running = Task {
            defer { race.finish() }
            try await operation()
        }
        let (token, arm) = attemptDeadlines.add(clock.now().advanced(by: limit)) {
            if race.expire() { running.cancel() }
        }
        if let arm { work.yield(.attemptTimer(deadline: arm)) }
        let result = await withTaskCancellationHandler {
            await running.result
        } onCancel: {
            running.cancel()
        }
        attemptDeadlines.remove(token)
        if race.expired { throw AttemptTimedOut(job: command.job, limit: limit) }
        try result.get()
    }

    /// Ends a command that was cancelled while it ran (``cancel(job:service:)``), once its failure
    /// has been counted: taken back from where the failure parked it.
    private nonisolated func stopCancelled(_ command: Command, after decision: FailureDecision, _ context: AttemptContext) async -> RunResult {
        switch decision {
        case .stopped(let stopped):
            return .stopped(stopped)
        case .retryLater:
            return .stopped(JobStopped(evaluation: .cancel, reason: .cancelledByOperator, incident: context.incident))
        case .parked(let id):
            await withdrawCancelled(command, from: id)
            return .stopped(JobStopped(evaluation: .cancel, reason: .cancelledByOperator, incident: id))
        case .retryNow:
            return .stopped(JobStopped(evaluation: .cancel, reason: .cancelledByOperator, incident: context.incident))
        }
    }

    private func withdrawCancelled(_ command: Command, from id: IncidentID?) {
        guard let id else {
            budgetWaiters.removeAll { $0.serial == command.serial }
            return
        }
        guard let incident = incidents[id] else { return }
        parkedTotal -= incident.remove { $0.serial == command.serial }.count
        incident.emptiedByOperator = true
        if incident.isolation && incident.isEmpty { resolveEmptied(incident) }
    }

    /// Takes a slot of the command's scope, waiting for one if none is free; `.ask` when an
    /// incident (or the bus's stop) holds the job back.
    private nonisolated func slot(for command: Command, retry: Bool) async -> SlotGrant {
        let job = command.job
        let (grant, wake) = admission.withLock { $0.enter(job, at: clock.now()) }
        wakeScope(job.scope, at: wake)
        if let grant { return grant }
        if let deadline = command.limits?.expiresAt {
            // Its time limit counts while it waits.
            work.yield(.slotExpiry(serial: command.serial, scope: job.scope, deadline: deadline))
        }
        return await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                let (answer, wake) = admission.withLock { admission -> (SlotGrant?, TimelineInstant?) in
                    // A task cancelled before it got here was not found by its cancellation
                    // handler: it must not wait.
                    if Task.isCancelled { return (.cancelled, nil) }
                    // Asked again under the lock the waiter is queued under: a slot may have
                    // been freed since.
                    let (grant, wake) = admission.enter(job, at: clock.now())
                    if grant == nil { admission.wait(Admission.Waiter(serial: command.serial, job: job, isRetry: retry, continuation: continuation)) }
                    return (grant, wake)
                }
                wakeScope(job.scope, at: wake)
                if let answer { continuation.resume(returning: answer) }
            }
        } onCancel: {
            let waiter = admission.withLock { $0.withdraw(serial: command.serial, scope: job.scope) }
            waiter?.continuation.resume(returning: .cancelled)
        }
    }

    /// What a run that held a slot says of its scope.
    private nonisolated func ending(
        _ command: Command, _ outcome: ConcurrencyLimit<TimelineInstant>.Outcome, startedAt started: TimelineInstant, lent: Bool
    ) -> Admission.Ending {
        Admission.Ending(
            outcome: outcome, startedAt: started, fresh: command.isFresh, counts: command.counts, teaches: command.teaches,
            suspected: command.suspectedFreshRun, lent: lent
        )
    }

    /// Gives back a job's slot of its scope, and lets the runs it frees go on.
    nonisolated func releaseSlot(_ job: Job, _ ending: Admission.Ending, at now: TimelineInstant) {
        let (answers, wake) = admission.withLock { $0.release(job, ending, at: now) }
        wakeScope(job.scope, at: wake)
        for (waiter, answer) in answers { waiter.continuation.resume(returning: answer) }
    }

    /// Hands a scope's free slots to the runs waiting for them (its pause ended, or its rate has a
    /// token again).
    nonisolated func grantSlots(_ scope: String) {
        let (answers, wake) = admission.withLock { $0.admitWaiting(scope, at: clock.now()) }
        wakeScope(scope, at: wake)
        for (waiter, answer) in answers { waiter.continuation.resume(returning: answer) }
    }

    /// Arms the timer that hands out a scope's slots again at `deadline`, when its rate or a pause
    /// withholds them until then.
    nonisolated func wakeScope(_ scope: String, at deadline: TimelineInstant?) {
        guard let deadline else { return }
        work.yield(.paceTimer(scope: scope, deadline: deadline))
    }

    /// What a failure says of its scope's load: a server that asked to slow down is overloaded,
    /// one that failed in a way that passes (a 5xx, a timeout, a reset) pushes back; anything
    /// else says nothing.
    nonisolated static func load(signalledBy error: any Error) -> ConcurrencyLimit<TimelineInstant>.Outcome {
        switch (error as? any CategorizedError)?.category {
        case .rateLimited: .overloaded
        case .transient: .backPressure
        default: .other
        }
    }

    /// Runs a command the bus held, and delivers its outcome to its completion.
    nonisolated func runHeld(_ command: Command, _ context: AttemptContext) async {
        switch await attempt(command, context) {
        case .completed:
            await command.completion(.succeeded)
            // After the completion: whoever waits for the canary has its result before a
            // subscriber hears that its incident resolved.
            if case .canary(let id) = context { await canarySucceeded(id) }
        case .stopped(let stopped):
            await command.completion(.stopped(stopped))
            // Likewise for a job given up by its own incident.
            if stopped.reason == .deadLettered, let id = stopped.incident { await gaveUp(id) }
        case .parked, .retryLater: break
        }
    }

    /// Decides what becomes of a command whose run failed. `successesBefore`: the successes of its
    /// scope counted when the run started (``ScopeOutcomes/successes``).
    func failed(
        _ command: Command,
        _ error: any Error,
        _ context: AttemptContext,
        startedAt started: TimelineInstant,
        successesBefore: UInt64,
        retried: Bool = false
    ) -> FailureDecision {
        let decision = decide(command, error, context, startedAt: started, successesBefore: successesBefore, retried: retried)
        // A canary that did not come back with its incident's cause means the cause is gone.
        if case .canary(let id) = context, let incident = incidents[id], incident.state == .canary {
            switch decision {
            case .retryNow: break
            case .parked(let parkedIn) where parkedIn == id: break
            // Its own incident gave the job up: resolved once its caller has the outcome.
            case .stopped where incident.givenUp: break
            // The bus stops: its run was cut short and says nothing of the cause, whatever it
            // failed with. The incident ends with the bus's run, not as recovered.
            case .stopped(let stopped) where stopped.reason == .shutdown: break
            // It found its work replaced before it reached the scope: it says nothing of the
            // cause, and the next job is tried now.
            case .stopped(let stopped) where stopped.reason == .superseded: take(.canary, for: incident, byOperator: true)
            case .parked, .stopped, .retryLater: stepFinished(incident, .succeeded)
            }
        }
        return decision
    }

    private func decide(_ command: Command, _ error: any Error, _ context: AttemptContext, startedAt started: TimelineInstant, successesBefore: UInt64, retried: Bool) -> FailureDecision {
        var command = command
        command.lastRun = started.duration(to: clock.now())
        if lifecycle == .stopped {
            return .stopped(JobStopped(evaluation: .cancel, reason: .shutdown))
        }
        let failure: Failure
        if let categorized = error as? any CategorizedError {
            failure = Failure(categorized, job: command.job)
        } else if error is CancellationError {
            return .stopped(JobStopped(evaluation: .cancel, reason: .taskCancelled))
        } else if let stopped = error as? JobStopped {
            // The operation ran a job of its own through the bus, which already decided.
            return .stopped(stopped)
        } else {
            failure = fallback(error, command.job)
        }
        if !retried, failure.category.kind == .unauthenticated, let renewed = credentialsRenewedAt[failure.scope], renewed >= started {
            // Refused with the credentials the realm had when the run started, which have been
            // renewed since: the new ones were not refused. Tried again at once, with them;
            // no incident opens, and nobody signs in again.
            return .retryNow
        }
        switch respond(to: failure, job: command.job) {
        case .handled(let evaluation, let failure):
            return evaluate(evaluation, failure, command)
        case .unhandled(let failure):
            switch configuration.grouping {
            case .byCause: return route(failure, command, context, successesBefore: successesBefore)
            case .perJob: return route(failure.belonging(to: command.job), command, context, successesBefore: successesBefore)
            }
        }
    }

    /// Offers a failure to its service's responders, last connected first.
    func respond(to failure: Failure, job: Job?) -> ResponderDecision {
        guard !responders.isEmpty, let chain = responders[failure.service], !chain.isEmpty else {
            return .unhandled(failure)
        }
        var failure = failure
        for link in chain.reversed() {
            switch link.responder.respond(to: failure, job: job) {
            case .pass:
                continue
            case .rewrite(let rewritten):
                failure = rewritten
            case .handle(let evaluation):
                if evaluation == .abort {
                    emit(BusEvent(kind: .serviceAborted, job: job, reason: failure.text.description))
                }
                return .handled(evaluation, failure)
            }
        }
        return .unhandled(failure)
    }

    /// Carries out a responder's evaluation.
    private func evaluate(_ evaluation: Evaluation, _ failure: Failure, _ command: Command) -> FailureDecision {
        guard evaluation == .retry else {
            return .stopped(JobStopped(evaluation: evaluation, reason: .handledByResponder, failure: failure))
        }
        if let stopped = limitReached(command, failure: failure, incident: nil) { return .stopped(stopped) }
        creditSuccesses()
        let now = clock.now()
        let price = budget.price(ofRetryAfterRun: command.lastRun)
        if budgetWaiters.isEmpty && budget.withdraw(at: now, price: price) { return .retryNow }
        if command.job.whenHeld == .failFast {
            // The retry would wait for the budget: a job that may not wait ends now.
            return .stopped(JobStopped(evaluation: .cancel, reason: .held, failure: failure))
        }
        if command.durable {
            // Its owner keeps it until the budget has a token.
            return .retryLater(now.duration(to: budget.nextToken(after: now, price: price)))
        }
        budgetWaiters.append(command)
        scheduleExpiry(of: command)
        scheduleBudgetWake(after: now)
        return .parked(nil)
    }

    /// Joins the failure to its open incident or opens one, and parks the command under it; or,
    /// for a job whose failures are its own, gives it an incident of its own.
    ///
    /// A failure that may be its scope's (`unreachable`, `transient`, `rateLimited`) is first
    /// recorded in the scope's ``ScopeOutcomes`` and weighed as evidence against the job
    /// (``ErrorBusConfiguration/Isolation``). Unless that singles the job out, the failure is the
    /// scope's: while the scope still serves other jobs, a `transient` or `rateLimited` failure
    /// paces (``pace(_:_:in:)``); otherwise its incident holds the scope.
    private func route(_ failure: Failure, _ command: Command, _ context: AttemptContext, successesBefore: UInt64) -> FailureDecision {
        var command = command
        let fresh = command.isFresh
        command.failedRuns += 1
        let kind = failure.category.kind
        let tellsJobsApart = kind.isolates && configuration.grouping == .byCause
        let existing = openIncidents[failure.fingerprint]
        if tellsJobsApart, let retriedBy = context.incident, let retrying = incidents[retriedBy], retrying.isolation,
           kind == retrying.fingerprint.kind,
           // Others fail so too when another incident of this cause holds the scope (not one
           // that paces or releases its jobs): then it waits with them, below.
           existing.map({ $0 === retrying || !$0.state.holdsScope }) ?? true {
            // Its own incident tried it again, and it failed again the same way, whatever the
            // cause this time (a request that never gets an answer times out one way or another).
            // It counts as failing on its own only if another job succeeded meanwhile.
            let successes = admission.withLock { $0.outcomes(of: command.job.service, at: command.job.scope).successes }
            let counts = successes != (command.successesAtLastFailure ?? successesBefore)
            command.successesAtLastFailure = successes
            return failedOnItsOwn(command, failure, in: retrying, counts: counts)
        }
        var outcomes: ScopeOutcomes?
        if tellsJobsApart && command.ownFailures == 0 {
            // It failed on its own before the bus last started.
            if command.job.failedOnItsOwn > 0 {
                command.successesAtLastFailure = admission.withLock { $0.outcomes(of: command.job.service, at: command.job.scope).successes }
                return isolate(command, failure, outcomes: nil)
            }
            let (recorded, freshRun) = admission.withLock { $0.failed(command.job, fresh: fresh, cause: failure.cause) }
            if let freshRun { command.freshFailure = freshRun }
            let wasSuspected = command.evidence >= Command.suspicion
            command.evidence += recorded.evidence(ofFailureWith: failure.cause, after: command.successesAtLastFailure ?? successesBefore)
            command.successesAtLastFailure = recorded.successes
            if !wasSuspected, let freshRun = command.suspectedFreshRun {
                // Its failures nearly single it out: its fresh failure no longer counts as one of
                // the scope's.
                admission.withLock { $0.suspect(command.job, freshRun: freshRun) }
            }
            if command.evidence >= configuration.isolation.evidence {
                return isolate(command, failure, outcomes: recorded)
            }
            outcomes = recorded
        }
        // Whether the scope serves others while it refuses this job: then its incident paces.
        let paces = kind.paces && outcomes?.serves == true
        guard let incident = existing else {
            guard lifecycle != .stopped else {
                return .stopped(JobStopped(evaluation: .cancel, reason: .shutdown, failure: failure))
            }
            // Opening an incident parks or dead-letters its first command.
            return open(failure, parking: command, pacing: paces).decision!
        }
        if !incident.parks {
            join(incident, failure)
            return deadLetter(command, failure, in: incident)
        }
        if context == .canary(incident.id) && incident.state == .canary {
            incident.failures &+= 1
            incident.category = failure.category
            incident.lastCheck = failure.text.message
            emit(BusEvent(kind: .canaryFailed, incident: incident.snapshot(at: clock.now()), reason: failure.text.message))
            let decision = park(command, in: incident, failed: true, failure: failure)
            stepFinished(incident, .failed(reason: failure.cause, retryAfter: failure.category.retryAfter))
            postponeCanary(of: incident, byCostOf: command)
            return decision
        }
        if !incident.state.holdsScope {
            // Releasing its jobs, pacing, or settling: its cause is back.
            incident.failures &+= 1
            incident.category = failure.category
            if paces { return pace(command, failure, in: incident) }
            // The scope serves no more: the incident holds it again, its policy going on where it
            // was (within the settle window, the same incident again).
            let decision = park(command, in: incident, failed: true, failure: failure)
            releaseInterrupted(incident, by: failure)
            return decision
        }
        join(incident, failure)
        return park(command, in: incident, failed: true, failure: failure)
    }

    /// Parks a command its scope refused while it served others under the scope's incident, which
    /// paces: the job runs again after a back-off of its own (for a `rateLimited` failure, no
    /// sooner than the server's hint, plus jitter), beside the incident's other jobs and the
    /// scope's new work, at the pace the scope serves. Nothing is held back.
    func pace(_ command: Command, _ failure: Failure, in incident: IncidentRecord) -> FailureDecision {
        if incident.state != .pacing {
            // Its cause came back while it settled: its close is off. A release under way goes on.
            transition(incident, to: .pacing(running: incident.isReleasing), keepingSchedule: incident.state == .releasing)
            if eventsHeldForOpening == nil {
                emit(BusEvent(kind: .pacingStarted, incident: incident.snapshot(at: clock.now()), reason: failure.text.message))
            }
        }
        let due = clock.now().advanced(by: max(pacedRetryDelay(after: command.failedRuns, failure), retryCost(of: command)))
        let decision = park(command, in: incident, failed: true, failure: failure, due: due)
        armDelayedWake(incident)
        return decision
    }

    /// How long a job its scope refused while it served others waits before it runs again: the
    /// pacing back-off for its failures so far, and no less than the server's hint, plus jitter.
    private func pacedRetryDelay(after failures: Int, _ failure: Failure) -> Duration {
        var delay = Backoff(configuration.pacing.retry).delay(forAttempt: max(0, failures - 1), using: &random)
        if let hint = failure.category.retryAfter {
            let rateLimit = configuration.rateLimit
            let clamped = min(max(hint, rateLimit.minimum), rateLimit.maximum)
            delay = max(delay, clamped * (1 + Double.random(in: 0...rateLimit.jitter, using: &random)))
        }
        return delay
    }

    /// What trying `command` again costs, as the least it waits before its next run: as long as
    /// its failed run took, doubled with each failure in a row (at most 32 times as long, and at
    /// most an hour unless the run itself took longer). A failed request costs little, and its
    /// back-off decides. A large upload cut half way costs its bytes at the link's speed: it
    /// waits at least that long, so a job that keeps failing so takes at most half the link's
    /// time, then less and less, however soon its back-off or its neighbours' successes would
    /// have it run again.
    func retryCost(of command: Command) -> Duration {
        let doubled = command.lastRun * (1 << min(max(command.failedRuns - 1, 0), 5))
        return min(doubled, max(command.lastRun, .seconds(3600)))
    }

    /// Moves `incident`'s next canary to no sooner than what trying `command`, whose run just
    /// failed under it, again costs: for an incident of its own, ``retryCost(of:)``; for one of
    /// its scope's, the run's length alone, not doubled: its canaries test the scope, whose
    /// return is noticed no later than one run after (a server that hangs costs each canary its
    /// timeout, and the retry budget prices it so).
    func postponeCanary(of incident: IncidentRecord, byCostOf command: Command) {
        incident.lastFailedRun = command.lastRun
        let cost = incident.isolation ? retryCost(of: command) : command.lastRun
        guard cost > .zero, let next = incident.next, next.step == .canary else { return }
        let earliest = clock.now().advanced(by: cost)
        if next.at < earliest { schedule(.canary, at: earliest, for: incident) }
    }

    /// Gives a job whose failures are its own an incident of its own, which holds back nothing
    /// and retries it on the isolation's back-off. `outcomes`: what its scope's runs came to,
    /// which singled it out (`nil`: it was set aside before the bus last started).
    private func isolate(_ command: Command, _ failure: Failure, outcomes: ScopeOutcomes?) -> FailureDecision {
        var command = command
        command.ownFailures = command.job.failedOnItsOwn + 1
        var own = failure.belonging(to: command.job)
        let text = failure.text
        let limit = configuration.isolation.maxAttempts
        let how: String
        if let outcomes {
            let share = Int((outcomes.failureShare(of: failure.cause) * 100).rounded())
            how = "\(command.job.shownName) fails while other \(command.job.service) jobs at \(failure.scope) succeed (it failed \(IncidentReporter.count(command.failedRuns, "time")) in a row; theirs fail so about \(share) % of the time)"
        } else {
            how = "\(command.job.shownName) fails on its own again (it did before the bus last started)"
        }
        own.explain(OperatorText(
            title: "Fails on its own",
            message: "\(how): \(text.title): \(text.message)",
            next: limit.map { "It is retried on its own, at most \($0) times in all, then set aside as a dead letter; the other jobs go on." }
                ?? "It is retried on its own until it succeeds; the other jobs go on."
        ))
        if let already = openIncidents[own.fingerprint] {
            return failedOnItsOwn(command, failure, in: already, counts: true)
        }
        let parksIt = limit.map { command.ownFailures < $0 } ?? true
        let (id, decision) = open(own, parking: parksIt ? command : nil, policy: IncidentPolicy(isolating: failure, configuration: configuration), isolation: true)
        emit(BusEvent(kind: .jobIsolated, incident: incidents[id]?.snapshot(at: clock.now()), job: command.job, reason: own.text.message))
        guard !parksIt, let incident = incidents[id] else { return decision! }
        return giveUp(command, failure, in: incident)
    }

    /// A job its own incident tried again failed again: parked for the next try, or given up.
    /// `counts`: whether the failure counts as one on its own (another job succeeded since its
    /// previous one); one that does not is retried without counting.
    private func failedOnItsOwn(_ command: Command, _ failure: Failure, in incident: IncidentRecord, counts: Bool) -> FailureDecision {
        var command = command
        if counts { command.ownFailures += 1 }
        incident.failures &+= 1
        incident.category = failure.category
        incident.lastCheck = failure.text.message
        if counts, let limit = configuration.isolation.maxAttempts, command.ownFailures >= limit {
            return giveUp(command, failure, in: incident)
        }
        emit(BusEvent(kind: .canaryFailed, incident: incident.snapshot(at: clock.now()), reason: failure.text.message))
        let decision = park(command, in: incident, failed: true, failure: failure)
        if incident.state == .canary {
            stepFinished(incident, .failed(reason: failure.cause, retryAfter: failure.category.retryAfter))
            postponeCanary(of: incident, byCostOf: command)
        }
        return decision
    }

    /// Sets aside a job that failed on its own as often as it may; its incident resolves once
    /// the job's caller has the outcome (``gaveUp(_:)``).
    private func giveUp(_ command: Command, _ failure: Failure, in incident: IncidentRecord) -> FailureDecision {
        var given = failure
        given.explain(OperatorText(
            title: "Given up",
            message: "\(command.job.shownName) failed \(IncidentReporter.count(command.ownFailures, "time")) on its own while other \(command.job.service) jobs at \(failure.scope) succeeded; the last time: \(failure.text.title): \(failure.text.message)",
            next: "It was set aside as a dead letter: retry it once its cause is fixed, or discard it."
        ))
        incident.givenUp = true
        // Nothing more is tried: what its last schedule set off is stale.
        transition(incident, to: incident.phase)
        return deadLetter(command, given, in: incident)
    }

    /// Resolves an incident of one job that gave its job up, once the job's caller has the
    /// outcome.
    func gaveUp(_ id: IncidentID) {
        guard let incident = incidents[id], incident.givenUp, incident.isEmpty else { return }
        resolve(incident, as: .givenUp)
    }

    /// Counts a failure into its open incident: no new policy run, no event.
    func join(_ incident: IncidentRecord, _ failure: Failure) {
        incident.failures &+= 1
        switch failure.category {
        case .rateLimited, .invalid:
            incident.category = failure.category
            if let action = incident.policy.joined(by: failure, at: clock.now(), using: &random) {
                execute(action, for: incident)
            }
        case .unreachable, .transient, .unauthenticated, .fatal:
            break
        }
    }

    /// Parks a command under an incident, unless parking is full: among the jobs that failed under
    /// it when `failed`, otherwise among those that wait behind it.
    func park(
        _ command: Command,
        in incident: IncidentRecord,
        failed: Bool,
        failure: Failure?,
        due: TimelineInstant? = nil
    ) -> FailureDecision {
        if command.job.whenHeld == .failFast {
            return .stopped(JobStopped(evaluation: .cancel, reason: .held, failure: failure, incident: incident.id))
        }
        if let stopped = limitReached(command, failure: failure, incident: incident.id) { return .stopped(stopped) }
        if command.durable {
            // Its owner keeps it: parked under the incident, or queued until its back-off is over;
            // what its failures found waits for its next run.
            if failed { durableFailures.withLock { $0.save(command) } }
            if let due {
                incident.pacedDurably(command.job, until: due)
                return .retryLater(max(.zero, clock.now().duration(to: due)))
            }
            incident.parkedDurably(command.job)
            return .parked(incident.id)
        }
        guard parkedTotal < configuration.maxParkedJobs else {
            overflowCount += 1
            let reason = "parking is full (\(configuration.maxParkedJobs) jobs held); \(command.job) was not parked"
            logger.debug("parking overflow", metadata: ["job": "\(command.job)", "incident": "\(incident.id)"])
            emit(BusEvent(kind: .parkingOverflow, incident: incident.snapshot(at: clock.now()), job: command.job, reason: reason))
            return .stopped(JobStopped(evaluation: .cancel, reason: .parkingFull, failure: failure, incident: incident.id))
        }
        incident.append(command, failed: failed, due: due)
        parkedTotal += 1
        scheduleExpiry(of: command)
        parkedWaiters.resume(parked: parkedTotal)
        return .parked(incident.id)
    }

    /// Why a command may not be held again, if one of its job's limits says so: its time is up
    /// or it failed as many runs as it may.
    func limitReached(_ command: Command, failure: Failure?, incident: IncidentID?) -> JobStopped? {
        if command.hasExpired(at: clock.now()) {
            return JobStopped(evaluation: .cancel, reason: .expired, failure: failure, incident: incident)
        }
        if command.hasExhaustedAttempts {
            return JobStopped(evaluation: .cancel, reason: .attemptsExhausted, failure: failure, incident: incident)
        }
        return nil
    }

    /// Ends a held command when its time is up, if its job has a time limit: once per command,
    /// however often it is parked again.
    func scheduleExpiry(of command: Command) {
        guard let limits = command.limits, let deadline = limits.expiresAt,
              !limits.expiryScheduled.exchange(true, ordering: .relaxed)
        else { return }
        expiries.insert(Expiry(deadline: deadline, serial: command.serial))
        armExpiryTimer(at: deadline)
    }

    /// Arms the one timer of the held jobs' expiries for `deadline`, unless one is armed sooner.
    func armExpiryTimer(at deadline: TimelineInstant) {
        if let armed = expiryWakeAt, armed <= deadline { return }
        expiryWakeAt = deadline
        work.yield(.expiryTimer(deadline: deadline))
    }

    /// Ends every held command whose time is up, and arms the timer for the next.
    ///
    /// The timer wakes at most every ``expiryGranularity``: a burst of parked jobs expires in a
    /// few batches, each one pass over the held jobs, not one pass per job.
    nonisolated func expiryTimerFired(_ deadline: TimelineInstant) async {
        let (expired, incidentOf) = await takeExpired(armedFor: deadline)
        for command in expired {
            await command.completion(.stopped(JobStopped(evaluation: .cancel, reason: .expired, incident: incidentOf[command.serial] ?? nil)))
        }
    }

    /// How often at most the held jobs' expiry is looked at: a job ends at most this late.
    static let expiryGranularity = Duration.milliseconds(100)

    private func takeExpired(armedFor deadline: TimelineInstant) -> ([Command], [UInt64: IncidentID?]) {
        // A timer armed for a later deadline than the one now armed was overtaken: the sooner
        // one looks at everything due.
        guard expiryWakeAt == deadline else { return ([], [:]) }
        expiryWakeAt = nil
        let now = clock.now()
        var due = Set<UInt64>()
        while let next = expiries.min, next.deadline <= now {
            due.insert(expiries.removeMin().serial)
        }
        if let next = expiries.min {
            armExpiryTimer(at: max(next.deadline, now.advanced(by: Self.expiryGranularity)))
        }
        guard !due.isEmpty else { return ([], [:]) }
        return takeHeld(serials: due)
    }
    func deadLetter(_ command: Command, _ failure: Failure, in incident: IncidentRecord) -> FailureDecision {
        incident.deadLettered += 1
        let text = failure.text
        emit(BusEvent(
            kind: .jobDeadLettered,
            incident: incident.snapshot(at: clock.now()),
            job: command.job,
            reason: "\(text.title): \(text.message)"
        ))
        return .stopped(JobStopped(evaluation: .cancel, reason: .deadLettered, failure: failure, incident: incident.id))
    }
}
