import ErrorBus
import ErrorBusControl
import ErrorBusHTTP
import ErrorBusStore
import Foundation
import Logging
import Prometheus
import Varlink

/// The implementation of `io.errorbus.Control`: reads the bus and the store, and hands operator
/// actions to the bus, the store and the services.
struct ControlService: Sendable {
    /// The services errorbusd runs, in the order `GetStatus` lists them.
    static let services = [SyncService.service, LoaderService.service, AuthService.service]

    let bus: ErrorBus
    let store: JobStore
    let sync: SyncService
    let auth: AuthService
    let reload: ReloadService
    /// The auth realm the services' jobs use.
    let realm: String
    let authorization: ControlAuthorization
    /// When errorbusd started (wall clock).
    let startedAt: Date
    /// Where swift-metrics records, for `GetMetrics`; nil when the process bootstrapped none.
    let metrics: PrometheusCollectorRegistry?
    /// The health verdict of `GetStatus`.
    let health: HealthMonitor
    /// The reporter of the incidents, which counts their failures for each exposition.
    let reporter: IncidentReporter
    let logger: Logger
    /// The gauges set at each scrape.
    let gauges = StateGauges()

    /// The router serving `io.errorbus.Control` (and `org.varlink.service`, and the server's own
    /// errors as `io.errorbus.varlink`).
    func router() throws -> VarlinkRouter {
        var router = try VarlinkRouter(
            vendor: "errorbus",
            product: "errorbusd",
            version: ErrorBusVersion.current,
            url: "https://github.com/errorbus/errorbus",
            errorInterface: Control.serverErrors.interfaceName
        )
        try router.add(Control.interface)

        try router.implement(Control.getStatus) { _, _ in try await status() }
        try router.implement(Control.getMetrics) { _, _ in try await exposition() }
        try router.implement(Control.listIncidents) { filter, _ in try await incidents(filter) }
        try router.implement(Control.getIncident) { reference, _ in try await incident(reference.id) }
        try router.implement(Control.listJobs) { filter, _ in try await jobs(filter) }
        try router.implement(Control.listDeadLetters) { filter, _ in
            let jobs = try storeCall { () throws(StoreError) in try store.deadLetters(incident: filter.incident.map(UInt64.init)) }
            return Control.JobList(jobs: jobs.map { Control.Job($0) }, total: jobs.count)
        }
        try router.implementStreaming(Control.watch) { _, _, replies in try await watch(replies) }

        try implementMutating(Control.retry, in: &router) { target in try await retry(target) }
        try implementMutating(Control.discard, in: &router) { target in try await discard(target) }
        try implementMutating(Control.cancel, in: &router) { reference in
            let service = reference.service ?? SyncService.service
            let id = try await resolve(job: reference.id, service: service)
            guard (try? await bus.cancel(job: id, service: service)) != nil else {
                throw try notActionable(id, service: service, by: .cancel)
            }
            return VarlinkEmpty()
        }
        try implementMutating(Control.pause, in: &router) { reference in
            try Self.check(service: reference.service)
            let id = await bus.pause(reference.service)
            return Control.IncidentReference(id: Int(id.rawValue))
        }
        try implementMutating(Control.resume, in: &router) { reference in
            try Self.check(service: reference.service)
            return Control.Count(count: await bus.resume(reference.service))
        }
        try implementMutating(Control.reauthenticate, in: &router) { _ in
            switch await auth.reauthenticate(realm: realm) {
            case .renewed:
                await bus.credentialsRenewed(realm: realm)
                return Control.Reauthentication(outcome: "renewed", message: "A new access token is in place.")
            case .rejected(let text):
                return Control.Reauthentication(outcome: "rejected", message: "\(text.title): \(text.message)")
            case .unavailable(let reason):
                return Control.Reauthentication(outcome: "unavailable", message: reason)
            }
        }
        try implementMutating(Control.reload, in: &router) { _ in
            do throws(ConfigurationError) {
                try await reload.reload()
            } catch {
                throw Control.reloadFailed.error(.init(error))
            }
            return VarlinkEmpty()
        }
        return router
    }

    /// Implements a method that changes something: only for root and the control group, and
    /// logged with the caller.
    private func implementMutating<Parameters, Reply>(
        _ method: VarlinkMethod<Parameters, Reply>,
        in router: inout VarlinkRouter,
        _ handler: @escaping @Sendable (Parameters) async throws -> Reply
    ) throws {
        let authorization = self.authorization
        let logger = self.logger
        try router.implement(method) { parameters, context in
            guard authorization.mayChange(context.peer) else {
                logger.notice(
                    "control: \(method.name) refused to uid \(context.peer.uid) (pid \(context.peer.pid)): not root or in group \(authorization.groupName ?? "(none)")"
                )
                throw Control.permissionDenied.error(
                    .init(method: method.qualifiedName, uid: Int(context.peer.uid), group: authorization.groupName)
                )
            }
            logger.notice("control: \(method.name) by uid \(context.peer.uid) (pid \(context.peer.pid))")
            return try await handler(parameters)
        }
    }

    private static func check(service: String) throws {
        guard services.contains(service) else { throw Control.noSuchService.error(.init(service: service)) }
    }

    /// Runs a store call; a failure is answered with `StoreUnavailable` (and logged).
    private func storeCall<Result>(_ body: () throws(StoreError) -> Result) throws -> Result {
        do {
            return try body()
        } catch {
            logger.error("control: the store failed: \(error)")
            throw Control.storeUnavailable.error(.init(reason: "\(error)"))
        }
    }

    // MARK: - Reading

    func exposition() async throws -> Control.MetricsExposition {
        guard let metrics else { return Control.MetricsExposition(text: "") }
        let pending = try storeCall { () throws(StoreError) in try store.pendingCounts() }
        let backlog = try storeCall { () throws(StoreError) in try store.backlog() }
        let snapshot = await bus.snapshot()
        let heldQueue = await sync.heldQueue()
        reporter.countAbsorbed(snapshot)
        gauges.update(StateGauges.State(
            snapshot: snapshot,
            health: health.report(snapshot, heldQueue: heldQueue),
            pending: pending,
            heldQueue: heldQueue,
            backlog: backlog,
            unqueued: sync.unqueued.summary,
            unreadableFiles: await sync.unreadableFiles.count,
            services: Self.services
        ))
        return Control.MetricsExposition(text: metrics.emitToString())
    }

    func status() async throws -> Control.Status {
        let snapshot = await bus.snapshot()
        let heldQueue = await sync.heldQueue()
        let now = Date()
        let history = try storeCall { () throws(StoreError) in try store.incidents(limit: 50) }
        let pending = try storeCall { () throws(StoreError) in try store.pendingCounts() }
        var services: [Control.ServiceStatus] = []
        for name in Self.services {
            let places = JobPlaces(
                service: name,
                counts: pending[name] ?? JobCounts(),
                heldByBus: snapshot.heldByService[name] ?? 0,
                heldQueue: heldQueue
            )
            let holding = snapshot.incidents.filter {
                $0.service == name || ($0.parkedByService[name] ?? 0) > 0 || (places.heldBack > 0 && $0.id == heldQueue?.incident)
            }
            // Its own latest open incident, else the oldest that holds its work (another service's
            // outage of the same server, say): what keeps it from delivering.
            let lastError: Control.LastError? =
                if let open = holding.filter({ $0.service == name }).max(by: { $0.id < $1.id }) ?? holding.min(by: { $0.id < $1.id }) {
                    Control.LastError(
                        incident: Int(open.id.rawValue),
                        title: open.text.title,
                        message: open.text.message,
                        at: ControlTime.format(open.openedAt),
                        open: true
                    )
                } else if let last = history.first(where: { $0.service == name }) {
                    Control.LastError(
                        incident: Int(last.id),
                        title: last.title,
                        message: last.message,
                        at: ControlTime.format(last.openedAt),
                        open: last.resolution == nil
                    )
                } else {
                    nil
                }
            services.append(Control.ServiceStatus(
                name: name,
                state: Self.state(of: holding, running: snapshot.isRunning),
                queued: places.queued,
                inFlight: places.inFlight,
                parked: places.parked,
                dead: places.deadLettered,
                lastError: lastError,
                incidents: holding.map { Int($0.id.rawValue) }
            ))
        }
        let unreadable = await sync.unreadableFiles.map {
            Control.UnreadableFile(file: $0.name, reason: $0.reason, since: ControlTime.format($0.since))
        }
        let backlog = try storeCall { () throws(StoreError) in try store.backlog() }
        let unqueued = sync.unqueued.summary
        let limits = await sync.limits
        let health = self.health.report(snapshot, heldQueue: heldQueue, now: now)
        return Control.Status(
            version: ErrorBusVersion.current,
            startedAt: ControlTime.format(startedAt),
            statusLine: StatusLine.render(snapshot, health: health, heldQueue: heldQueue),
            running: snapshot.isRunning,
            services: services,
            incidents: snapshot.incidents.map { Control.Incident($0, now: now) },
            waitingForBudget: snapshot.waitingForBudget,
            retryBudgetTokens: snapshot.retryBudgetTokens,
            unreadableFiles: unreadable,
            health: health,
            backlog: Control.Backlog(
                files: backlog.jobs,
                bytes: Int(backlog.bytes),
                oldestQueuedAt: backlog.oldest.map(ControlTime.format),
                maxFiles: limits.backlog.maxFiles,
                maxBytes: limits.backlog.maxBytes.map { Int($0) },
                overflow: limits.backlog.overflow.rawValue,
                rejectedFiles: limits.rejectedFiles,
                unqueuedFiles: unqueued.files > 0 ? unqueued.files : nil,
                unqueuedBytes: unqueued.files > 0 ? Int(unqueued.bytes) : nil,
                oldestUnqueuedAt: unqueued.oldest.map(ControlTime.format),
                unqueuedReason: unqueued.files > 0 ? unqueued.reason : nil
            ),
            scopes: snapshot.concurrency.map { Control.Scope(scope: $0.scope, limit: $0.limit, inFlight: $0.inFlight, waiting: $0.waiting) },
            classify: limits.classify.map(\.description)
        )
    }

    /// A service's state from the open incidents that concern it: whether its work is delivered.
    static func state(of incidents: [IncidentSnapshot], running: Bool) -> Control.ServiceState {
        guard running else { return .stopped }
        if incidents.contains(where: { $0.state == .paused || $0.category.kind == .fatal }) { return .paused }
        if incidents.contains(where: { $0.state == .needsOperator }) { return .needsOperator }
        // An `invalid` incident sets rejected jobs aside; it holds nothing else back. Nor does one
        // whose cause went away (releasing, settling), one that paces, or one job's own.
        let holding: Set<IncidentState> = [.waiting, .canary, .probing, .reauthenticating]
        if incidents.contains(where: { $0.category.kind != .invalid && $0.fingerprint.job == nil && holding.contains($0.state) }) { return .held }
        if incidents.contains(where: { $0.state == .pacing }) { return .paced }
        return .running
    }

    func incidents(_ filter: Control.IncidentFilter) async throws -> Control.IncidentList {
        let snapshot = await bus.snapshot()
        let now = Date()
        var incidents = snapshot.incidents.map { Control.Incident($0, now: now) }
        if filter.all == true {
            let open = Set(incidents.map(\.id))
            let limit = min(max(filter.limit ?? 50, 0), 1000)
            let history = try storeCall { () throws(StoreError) in try store.incidents(limit: limit + open.count) }
            incidents += history.filter { !open.contains(Int($0.id)) }.prefix(limit).map { Control.Incident($0) }
        }
        return Control.IncidentList(incidents: incidents)
    }

    func incident(_ id: Int) async throws -> Control.IncidentDetail {
        guard id > 0 else { throw Control.noSuchIncident.error(.init(id: id)) }
        let incidentID = IncidentID(rawValue: UInt64(id))
        if let open = try? await bus.incident(incidentID), open.resolution == nil {
            let parked = (try? await bus.parkedJobs(in: incidentID)) ?? []
            return Control.IncidentDetail(
                incident: Control.Incident(open, now: Date()),
                parked: parked.prefix(1000).map { Control.JobName(id: $0.id, service: $0.service, name: $0.name) }
            )
        }
        if let stored = try storeCall({ () throws(StoreError) in try store.incident(UInt64(id)) }) {
            return Control.IncidentDetail(incident: Control.Incident(stored), parked: [])
        }
        if let resolved = try? await bus.incident(incidentID) {
            return Control.IncidentDetail(incident: Control.Incident(resolved, now: Date()), parked: [])
        }
        throw Control.noSuchIncident.error(.init(id: id))
    }

    /// The store's jobs, each as the bus holds it: the store keeps a job the bus holds (parked,
    /// or waiting for the retry budget) in flight, and only the bus knows where it waits. While
    /// an incident holds sync back, its queued jobs wait behind that incident: parked too, after
    /// those the bus holds.
    func jobs(_ filter: Control.JobFilter) async throws -> Control.JobList {
        let limit = min(max(filter.limit ?? 100, 0), 1000)
        let offset = max(0, filter.offset ?? 0)
        let held = await bus.heldJobs(service: filter.service ?? SyncService.service)
        let heldByID = Dictionary(held.map { ($0.job.id, $0) }, uniquingKeysWith: { first, _ in first })
        let heldQueue = filter.service.map { $0 == SyncService.service } ?? true ? await sync.heldQueue() : nil
        return try storeCall { () throws(StoreError) in
            switch filter.state {
            case .parked:
                let page = held.dropFirst(offset).prefix(limit)
                var jobs = try store.jobs(ids: page.map(\.job.id)).map { Control.Job($0, held: heldByID[$0.id]) }
                guard let heldQueue else { return Control.JobList(jobs: jobs, total: held.count) }
                // Then the queue, oldest first.
                if jobs.count < limit {
                    let queued = try store.jobs(service: heldQueue.service, state: .queued, offset: max(0, offset - held.count), limit: limit - jobs.count)
                    jobs += queued.map { Control.Job($0, heldBack: heldQueue) }
                }
                return Control.JobList(jobs: jobs, total: held.count + heldQueue.jobs)
            case .queued? where heldQueue != nil:
                // Sync's queue is parked (only sync keeps jobs in the store).
                return Control.JobList(jobs: [], total: 0)
            case .inFlight:
                let jobs = try store.jobs(
                    service: filter.service,
                    state: .inFlight,
                    excluding: Set(heldByID.keys),
                    offset: offset,
                    limit: limit
                )
                let counts = try store.counts(service: filter.service)
                return Control.JobList(jobs: jobs.map { Control.Job($0) }, total: max(0, counts.inFlight - held.count))
            case let state:
                let state = state.flatMap { JobState(rawValue: $0.rawValue) }
                let jobs = try store.jobs(service: filter.service, state: state, offset: offset, limit: limit)
                let counts = try store.counts(service: filter.service)
                return Control.JobList(
                    jobs: jobs.map { $0.state == .inFlight ? Control.Job($0, held: heldByID[$0.id]) : Control.Job($0, heldBack: heldQueue) },
                    total: state.map { counts[$0] } ?? counts.total
                )
            }
        }
    }

    func watch(_ replies: VarlinkReplyWriter<Control.Event>) async throws -> Control.Event {
        let subscription = await bus.subscribe()
        let now = Date()
        for incident in subscription.initialSnapshot.incidents {
            try await replies.send(Control.Event(
                kind: "incidentOpen",
                replay: true,
                at: ControlTime.format(now),
                incident: Control.Incident(incident, now: now)
            ))
        }
        try await replies.send(Control.Event(kind: "synchronized", at: ControlTime.format(now)))
        for await event in subscription {
            try await replies.send(Control.Event(event, now: Date()))
        }
        return Control.Event(kind: "end", at: ControlTime.format(Date()))
    }

    // MARK: - Operator actions

    /// The one thing a `Retry` or `Discard` names.
    private enum Target {
        case incident(Int)
        case job(String)
        case deadLetters
    }

    private static func target(_ target: Control.Target) throws -> Target {
        switch (target.incident, target.job, target.deadLetters == true) {
        case (let incident?, nil, false): return .incident(incident)
        case (nil, let job?, false): return .job(job)
        case (nil, nil, true): return .deadLetters
        default: throw Control.invalidTarget.error(.init(reason: "set exactly one of 'incident', 'job' and 'deadLetters'"))
        }
    }

    func retry(_ parameters: Control.Target) async throws -> Control.Count {
        switch try Self.target(parameters) {
        case .incident(let id):
            guard id > 0 else { throw Control.noSuchIncident.error(.init(id: id)) }
            // Its dead letters go back to the queue; an open incident takes its next step now.
            let requeued = try storeCall { () throws(StoreError) in try store.retryDeadLetters(incident: UInt64(id)) }
            if requeued > 0 { await sync.wakeUp() }
            do {
                try await bus.retry(incident: IncidentID(rawValue: UInt64(id)))
                return Control.Count(count: max(requeued, 1))
            } catch {
                guard requeued > 0 else { throw Control.noSuchIncident.error(.init(id: id)) }
                return Control.Count(count: requeued)
            }
        case .job(let given):
            let id = try await resolve(job: given, service: SyncService.service)
            if try storeCall({ () throws(StoreError) in try store.retryDeadLetter(id) }) {
                await sync.wakeUp()
                return Control.Count(count: 1)
            }
            // A job the bus holds: a parked one goes when its incident does, which takes its
            // next step now; a retry waiting for the budget runs now.
            if (try? await bus.retry(job: id, service: SyncService.service)) != nil {
                return Control.Count(count: 1)
            }
            // A queued job an incident holds back goes when that incident does, as a parked one.
            if try storeCall({ () throws(StoreError) in try store.job(id) })?.state == .queued,
                let incident = await sync.heldQueue()?.incident,
                (try? await bus.retry(incident: incident)) != nil
            {
                return Control.Count(count: 1)
            }
            throw try notActionable(id, service: SyncService.service, by: .retry)
        case .deadLetters:
            let requeued = try storeCall { () throws(StoreError) in try store.retryDeadLetters() }
            if requeued > 0 { await sync.wakeUp() }
            // And the jobs set aside on their own that are not dead letters yet: each is tried
            // again now.
            var isolated = 0
            for incident in await bus.snapshot().incidents where incident.fingerprint.job != nil && incident.service == SyncService.service {
                if (try? await bus.retry(incident: incident.id)) != nil { isolated += 1 }
            }
            return Control.Count(count: requeued + isolated)
        }
    }

    func discard(_ parameters: Control.Target) async throws -> Control.Count {
        switch try Self.target(parameters) {
        case .incident(let id):
            guard id > 0 else { throw Control.noSuchIncident.error(.init(id: id)) }
            let dead = try storeCall { () throws(StoreError) in try store.discardDeadLetters(incident: UInt64(id)) }
            do {
                let parked = try await bus.discard(incident: IncidentID(rawValue: UInt64(id)))
                return Control.Count(count: parked + dead.count)
            } catch {
                guard !dead.isEmpty else { throw Control.noSuchIncident.error(.init(id: id)) }
                return Control.Count(count: dead.count)
            }
        case .job(let given):
            let id = try await resolve(job: given, service: SyncService.service)
            if try storeCall({ () throws(StoreError) in try store.discardDeadLetter(id) }) != nil {
                return Control.Count(count: 1)
            }
            // A job the bus holds stops now, one it runs when its run ends (a run that succeeds
            // stands); sync records it discarded.
            if let cancellation = try? await bus.cancel(job: id, service: SyncService.service) {
                return Control.Count(count: 1, running: cancellation == .whenRunEnds ? 1 : nil)
            }
            if try storeCall({ () throws(StoreError) in try store.discardQueued(id) }) {
                return Control.Count(count: 1)
            }
            throw try notActionable(id, service: SyncService.service, by: .discard)
        case .deadLetters:
            let discarded = try storeCall { () throws(StoreError) in try store.discardDeadLetters() }
            return Control.Count(count: discarded.count)
        }
    }

    /// How many of the jobs an ambiguous id could name `AmbiguousJob` shows.
    static let ambiguityCandidates = 5

    /// The id of the job of `service` that `given` names: `given` itself when a job has that
    /// id, else the one job whose id starts with it (given at least
    /// `Control.minimumJobIDPrefix` characters), stored or held by the bus. When no job's does,
    /// `given` (the method answers `NoSuchJob`); when several jobs' do, `AmbiguousJob`.
    func resolve(job given: String, service: String) async throws -> String {
        if await bus.heldJob(id: given, service: service) != nil { return given }
        if try storeCall({ () throws(StoreError) in try store.job(given) })?.service == service { return given }
        guard given.count >= Control.minimumJobIDPrefix else { return given }
        let stored = try storeCall { () throws(StoreError) in
            try store.jobs(idPrefix: given, service: service, limit: Self.ambiguityCandidates)
        }
        // The store keeps every sync job; the bus holds other services' jobs, which it alone knows.
        var held = await bus.heldJobs(service: service).map(\.job).filter { $0.id.hasPrefix(given) }
        if !held.isEmpty {
            let known = try storeCall { () throws(StoreError) in try store.jobs(ids: held.map(\.id)) }
            let knownIDs = Set(known.filter { $0.service == service }.map(\.id))
            var seen = Set<String>()
            held = held.filter { !knownIDs.contains($0.id) && seen.insert($0.id).inserted }
        }
        let candidates = (stored.jobs.map { Control.JobName(id: $0.id, service: $0.service, name: $0.fileName) }
            + held.map { Control.JobName(id: $0.id, service: $0.service, name: $0.name) })
            .sorted { $0.id < $1.id }
        switch stored.total + held.count {
        case 0: return given
        case 1: return candidates[0].id
        case let matches:
            throw Control.ambiguousJob.error(.init(
                id: given,
                service: service,
                matches: matches,
                candidates: Array(candidates.prefix(Self.ambiguityCandidates))
            ))
        }
    }

    /// What a job-naming method acts on.
    enum JobAction {
        case retry, discard, cancel
    }

    /// The error for a job a method did not act on: `NoSuchJob` when the store does not know it,
    /// `JobNotActionable` with what becomes of it otherwise.
    func notActionable(_ id: String, service: String, by action: JobAction) throws -> any Error {
        guard let job = try storeCall({ () throws(StoreError) in try store.job(id) }), job.service == service else {
            return Control.noSuchJob.error(.init(id: id, service: service))
        }
        let reason: String =
            switch (job.state, action) {
            case (.queued, .retry): "it is queued, and uploaded as soon as an upload slot is free"
            case (.queued, _): "it is queued, not held by an incident; discard it with discard --job"
            case (.inFlight, _): "it is being uploaded, or what became of it is being recorded"
            case (.parked, _): "it waits on an incident, which releases it once its cause is gone"
            case (.deadLettered, _): "it is a dead letter, which no incident holds; discard it with discard --job"
            case (.delivered, _): "it was delivered"
            case (.discarded, _): "it was discarded"
            }
        return Control.jobNotActionable.error(.init(id: id, service: service, state: Control.JobState(job.state), reason: reason))
    }
}
