import DequeModule
import HeapModule
public import Logging
public import ServiceLifecycle
import Synchronization

/// The one place every failure of a daemon goes.
///
/// Services run their work through the bus (``perform(_:operation:)``, ``submit(_:operation:completion:)``)
/// or report failures with nothing to re-run (``report(_:)``). The bus categorises each failure,
/// lets the service's responders answer it first, and otherwise turns bursts of failures with
/// one fingerprint into one **incident** whose policy runs once: back-off with canaries, waiting
/// for a server's hint, a reachability gate, a single re-authentication, dead letters, or a
/// paused service. Jobs that fail meanwhile are parked under the incident and released, paced,
/// when its cause is gone.
///
/// Policies only make progress while ``run()`` runs: add the bus to the daemon's service group.
/// The bus does no I/O of its own; probes and re-authentication are injected.
public actor ErrorBus: Service {
    public nonisolated let configuration: ErrorBusConfiguration
    /// Categorises errors that do not conform to ``CategorizedError``.
    nonisolated let fallback: @Sendable (any Error, Job) -> Failure
    nonisolated let clock: Timeline
    let logger: Logger

    /// The probe of scopes without one of their own.
    var probe: (any ReachabilityProbe)?
    var probes: [String: any ReachabilityProbe] = [:]
    /// The authenticator of realms without one of their own.
    var authenticator: (any Authenticator)?
    var authenticators: [String: any Authenticator] = [:]
    /// Who keeps each service's parked jobs, for services that keep them in durable queues.
    var parkedJobSources: [String: any ParkedJobSource] = [:]
    var random: any RandomNumberGenerator

    enum Lifecycle {
        case idle
        case running
        case stopped
    }

    var lifecycle = Lifecycle.idle

    /// Open incidents by id and by fingerprint.
    var incidents: [IncidentID: IncidentRecord] = [:]
    var openIncidents: [Fingerprint: IncidentRecord] = [:]
    /// Incidents holding back new work, per key, oldest first.
    var holds: [HoldKey: [IncidentRecord]] = [:]
    var recentlyResolved = Deque<IncidentSnapshot>()
    /// When each realm's credentials were last renewed (a sign-in, or its owner saying so): a
    /// refusal of a run that started before then refused the old credentials, not the new ones.
    var credentialsRenewedAt: [String: TimelineInstant] = [:]
    var nextIncidentID: UInt64

    var parkedTotal = 0
    /// Tests waiting until the bus holds a number of parked jobs (``waitUntilParked(_:)``).
    var parkedWaiters = ParkedWaiters()
    /// When each held job with a time limit expires, soonest first, and when the one timer that
    /// ends them is armed for.
    var expiries = Heap<Expiry>()
    var expiryWakeAt: TimelineInstant?
    var overflowCount = 0
    var budget: RetryBudget<TimelineInstant>
    /// Commands whose retry waits for the budget, oldest first.
    var budgetWaiters = Deque<Command>()
    var budgetWakeAt: TimelineInstant?

    var responders: [String: [(id: UInt64, responder: any ErrorResponder)]] = [:]
    var nextResponderID: UInt64 = 0
    var broadcaster = EventBroadcaster()
    /// While an incident opens, the events its policy's first step emits wait here, so that
    /// subscribers see `incidentOpened` first.
    var eventsHeldForOpening: [BusEvent]?

    /// What admission needs to know, readable without a hop to the actor: the keys some
    /// incident holds, whether the bus stopped, and each scope's concurrency slots. The held
    /// keys are written only by the actor, under the lock, whenever ``holds`` gains or loses a
    /// key (the actor's own state stays authoritative); the slots are owned here.
    nonisolated let admission: Mutex<Admission>

    /// Successful operations not yet credited to the retry budget. Counted without a hop to
    /// the actor, folded in whenever the budget is consulted.
    nonisolated let pendingSuccesses = Atomic<Int>(0)
    /// The runs under way, for ``cancel(job:service:)`` of a job that is running.
    nonisolated let running = Mutex(RunningJobs())
    /// The evidence of failed runs of jobs kept in durable queues, from one run to the next.
    nonisolated let durableFailures = Mutex(DurableFailures())
    /// The deadlines of the runs under way (``ErrorBusConfiguration/attemptTimeout``).
    nonisolated let attemptDeadlines = AttemptDeadlines()
    nonisolated let serials = Atomic<UInt64>(0)

    /// Work the actor hands to ``run()``'s task group: timers, probes, canaries, releases.
    ///
    /// Items name incidents or jobs, never commands: a command stays parked in its incident (or
    /// in the budget's queue) until the task that runs it takes it, so work that a shutdown cuts
    /// short loses nothing.
    nonisolated let work: AsyncStream<Work>.Continuation
    let workStream: AsyncStream<Work>

    enum Work: Sendable {
        case timer(IncidentID, generation: UInt64, deadline: TimelineInstant)
        case budgetTimer(deadline: TimelineInstant)
        case canary(IncidentID, generation: UInt64)
        case probe(IncidentID, generation: UInt64, scope: String, kind: ErrorCategory.Kind)
        case reauthenticate(IncidentID, generation: UInt64, realm: String)
        case release(IncidentID, generation: UInt64)
        /// The next of an incident's jobs waiting out a back-off is due.
        case delayedDue(IncidentID, deadline: TimelineInstant)
        case withdraw(serial: UInt64)
        case expiryTimer(deadline: TimelineInstant)
        case retryNow(job: Job)
        case paceTimer(scope: String, deadline: TimelineInstant)
        /// A job with a time limit waits for a slot of its scope: it stops waiting then.
        case slotExpiry(serial: UInt64, scope: String, deadline: TimelineInstant)
        /// The earliest deadline of the runs under way (``AttemptDeadlines``).
        case attemptTimer(deadline: TimelineInstant)
        /// A server said a job's quota is spent until a reset: an incident tells it.
        case quotaSpent(Job, reset: Duration)
        /// An incident resolved with jobs parked under it in durable queues: their owners
        /// release them.
        case releaseDurable(IncidentID, services: [String])
    }

    /// Creates a bus. Nothing runs until ``run()`` is called.
    ///
    /// - Parameters:
    ///   - configuration: Policy parameters.
    ///   - clock: The clock every policy waits on; tests pass a manual one.
    ///   - probe: Checks whether an unreachable scope answers again, for every scope without a
    ///     probe of its own (``setProbe(_:forScope:)``). Without one, `unreachable` incidents test
    ///     recovery with a canary job instead.
    ///   - authenticator: Signs in again for `unauthenticated` incidents, for every realm without
    ///     an authenticator of its own (``setAuthenticator(_:forRealm:)``). Without one, they
    ///     need an operator.
    ///   - random: The source of jitter.
    ///   - fallback: Categorises errors that do not conform to ``CategorizedError``.
    ///   - logger: Where the bus logs (at debug level: the story is told by its events).
    public init(
        configuration: ErrorBusConfiguration = ErrorBusConfiguration(),
        clock: some Clock<Duration> = ContinuousClock(),
        probe: (any ReachabilityProbe)? = nil,
        authenticator: (any Authenticator)? = nil,
        random: some RandomNumberGenerator & Sendable = SystemRandomNumberGenerator(),
        fallback: @escaping @Sendable (any Error, Job) -> Failure = ErrorBusConfiguration.defaultFallback,
        logger: Logger
    ) {
        self.configuration = configuration
        self.fallback = fallback
        self.clock = Timeline(clock)
        self.probe = probe
        self.authenticator = authenticator
        self.random = random
        self.logger = logger
        self.nextIncidentID = configuration.firstIncidentID
        self.budget = RetryBudget(configuration.retryBudget, at: self.clock.now())
        self.admission = Mutex(Admission(concurrency: configuration.concurrency, pacing: configuration.pacing))
        (workStream, work) = AsyncStream.makeStream(of: Work.self)
    }

    /// Sets the reachability probe of every scope without one of its own, e.g. once the service
    /// that provides it exists.
    public func setProbe(_ probe: (any ReachabilityProbe)?) {
        self.probe = probe
    }

    /// Sets the reachability probe of one scope (a job's ``Job/scope``, e.g. an API's host), in
    /// place of the bus's own; `nil` lets the bus's own probe it again.
    ///
    /// An open incident of the scope asks it at its next probe. Whether an incident waits for
    /// probes or tests its scope with a canary is decided when it opens: an incident opened
    /// while the scope had no probe at all uses canaries until it ends.
    public func setProbe(_ probe: (any ReachabilityProbe)?, forScope scope: String) {
        probes[scope] = probe
    }

    /// Sets the authenticator of every realm without one of its own, e.g. once the auth service
    /// (which runs its own requests through this bus) exists.
    public func setAuthenticator(_ authenticator: (any Authenticator)?) {
        self.authenticator = authenticator
    }

    /// Sets the authenticator of one realm (a job's ``Job/realm``: whose credentials it uses), in
    /// place of the bus's own; `nil` lets the bus's own sign in for it again.
    public func setAuthenticator(_ authenticator: (any Authenticator)?, forRealm realm: String) {
        authenticators[realm] = authenticator
    }

    /// Sets who keeps `service`'s parked jobs in a durable queue of its own: the bus asks it for
    /// one of them as an incident's canary, and tells it when an incident releases them
    /// (``run(_:operation:)``). `nil` takes it away.
    public func setParkedJobSource(_ source: (any ParkedJobSource)?, forService service: String) {
        parkedJobSources[service] = source
    }

    /// The probe of a scope: its own, or the bus's.
    func probe(for scope: String) -> (any ReachabilityProbe)? {
        probes[scope] ?? probe
    }

    /// The authenticator of a realm: its own, or the bus's.
    func authenticator(for realm: String) -> (any Authenticator)? {
        authenticators[realm] ?? authenticator
    }

    /// Runs the bus's timers, probes, canaries and releases until the task is cancelled or, in a
    /// `ServiceGroup`, until its graceful shutdown.
    ///
    /// When it returns, every job still held by the bus gets ``JobStopped/Reason/shutdown`` and
    /// the bus refuses new work the same way. Runs in their callers' tasks finish; the bus's own
    /// (canaries, releases, retries) are cancelled, and a job whose run fails or is cancelled
    /// then ends with ``JobStopped/Reason/shutdown`` too. Call it once.
    ///
    /// In a `ServiceGroup`, list the bus after the services that run jobs through it: the group
    /// shuts services down in reverse order, so the bus stops first and every call waiting for a
    /// parked job returns (with ``JobStopped/Reason/shutdown``) before its service is asked to
    /// stop. A service must not return from its `run()` before it is asked to stop (the group
    /// takes that for a failure): one whose work ended with the bus waits for its turn
    /// (`try await gracefulShutdown()`). A service that must finish its jobs' runs before the
    /// bus goes (to record their outcomes) is listed after the bus instead, and cancels its
    /// waiting calls itself when it stops: a cancelled ``perform(_:operation:)`` withdraws its
    /// job.
    public nonisolated func run() async {
        guard await start() else { return }
        await withDiscardingTaskGroup { group in
            for await item in workStream.cancelOnGracefulShutdown() {
                group.addTask { await self.perform(item) }
            }
            // Stopped before the bus's own runs are cancelled, so that they end as a shutdown.
            await beginStopping()
            group.cancelAll()
        }
        let leftovers = await stop()
        for command in leftovers {
            await command.completion(.stopped(JobStopped(evaluation: .cancel, reason: .shutdown)))
        }
    }

    private func start() -> Bool {
        guard case .idle = lifecycle else {
            logger.error("ErrorBus.run() called more than once; ignoring the second call")
            return false
        }
        lifecycle = .running
        return true
    }

    /// Refuses new work and failures from now on (``JobStopped/Reason/shutdown``).
    private func beginStopping() {
        lifecycle = .stopped
    }

    /// Ends every open incident and hands back the commands that were still held.
    private func stop() -> [Command] {
        lifecycle = .stopped
        let turnedAway = admission.withLock { $0.stop() }
        for waiter in turnedAway { waiter.continuation.resume(returning: .ask) }
        work.finish()
        var leftovers = Array(budgetWaiters)
        budgetWaiters.removeAll()
        for incident in incidents.values.sorted(by: { $0.id < $1.id }) {
            // Resolved first: its last snapshot tells the jobs it still held.
            resolve(incident, as: .shutdown)
            leftovers += incident.removeAll()
        }
        parkedTotal = 0
        parkedWaiters.resumeAll()
        broadcaster.finish()
        return leftovers
    }

    private nonisolated func perform(_ item: Work) async {
        switch item {
        case .timer(let id, let generation, let deadline):
            guard (try? await clock.sleep(deadline)) != nil else { return }
            await timerFired(id, generation: generation)
        case .budgetTimer(let deadline):
            guard (try? await clock.sleep(deadline)) != nil else { return }
            await budgetTimerFired()
        case .canary(let id, let generation):
            await runCanary(id, generation: generation)
        case .probe(let id, let generation, let scope, let kind):
            await runProbe(id, generation: generation, scope: scope, kind: kind)
        case .reauthenticate(let id, let generation, let realm):
            await runReauthentication(id, generation: generation, realm: realm)
        case .release(let id, let generation):
            await runRelease(id, generation: generation)
        case .releaseDurable(let id, let services):
            await releaseDurable(id, services: services)
        case .delayedDue(let id, let deadline):
            guard (try? await clock.sleep(deadline)) != nil else { return }
            await delayedDue(id, armedFor: deadline)
        case .withdraw(let serial):
            await withdraw(serial: serial)
        case .expiryTimer(let deadline):
            guard (try? await clock.sleep(deadline)) != nil else { return }
            await expiryTimerFired(deadline)
        case .retryNow(let job):
            // Taken when its task starts: the budget's wake-up may have run it meanwhile.
            if let command = await takeBudgetWaiter(job) { await runHeld(command, .retry) }
        case .paceTimer(let scope, let deadline):
            guard (try? await clock.sleep(deadline)) != nil else { return }
            grantSlots(scope)
        case .slotExpiry(let serial, let scope, let deadline):
            guard (try? await clock.sleep(deadline)) != nil else { return }
            // Still waiting (not granted, not gone): its time is up.
            let waiter = admission.withLock { $0.withdraw(serial: serial, scope: scope) }
            waiter?.continuation.resume(returning: .expired)
        case .quotaSpent(let job, let reset):
            await quotaSpent(job, reset: reset)
        case .attemptTimer(let deadline):
            guard (try? await clock.sleep(deadline)) != nil else { return }
            if let next = attemptDeadlines.fired(armedFor: deadline, at: clock.now()) {
                work.yield(.attemptTimer(deadline: next))
            }
        }
    }

    /// Emits an event to every subscriber.
    func emit(_ event: BusEvent) {
        if eventsHeldForOpening != nil {
            eventsHeldForOpening?.append(event)
        } else {
            broadcaster.emit(event)
        }
    }

    /// Credits successes counted since the last look to the retry budget.
    func creditSuccesses() {
        budget.deposit(successes: pendingSuccesses.exchange(0, ordering: .relaxed))
    }
}
