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
            if (try? await bus.cancel(job: id, service: service)) != nil { return VarlinkEmpty() }
            // Sync's parked jobs are rows of the store, not jobs the bus keeps.
            if service == SyncService.service, try storeCall({ () throws(StoreError) in try store.discardParked(job: id) }) {
                return VarlinkEmpty()
            }
            throw try notActionable(id, service: service, by: .cancel)
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
        reporter.countAbsorbed(snapshot)
        gauges.update(StateGauges.State(
            snapshot: snapshot,
            health: health.report(snapshot),
            pending: pending,
            backlog: backlog,
            unqueued: sync.unqueued.summary,
            unreadableFiles: await sync.unreadableFiles.count,
            bandwidth: sync.bandwidth.current.rate,
            services: Self.services
        ))
        return Control.MetricsExposition(text: metrics.emitToString())
    }

    func status() async throws -> Control.Status {
        let snapshot = await bus.snapshot()
        let now = Date()
        let history = try storeCall { () throws(StoreError) in try store.incidents(limit: 50) }
        let pending = try storeCall { () throws(StoreError) in try store.pendingCounts() }
        let parked = try storeCall { () throws(StoreError) in try ParkedJobs(snapshot, store: store) }
        var services: [Control.ServiceStatus] = []
        for name in Self.services {
            let counts = pending[name] ?? JobCounts()
            let holding = snapshot.incidents.filter { $0.service == name || parked.holds($0, jobsOf: name) }
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
                queued: counts.queued,
                inFlight: counts.inFlight,
                parked: parked.of(service: name),
                dead: counts.deadLettered,
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
        let health = self.health.report(parked, now: now)
        return Control.Status(
            version: ErrorBusVersion.current,
            startedAt: ControlTime.format(startedAt),
            statusLine: StatusLine.render(parked, health: health),
            running: snapshot.isRunning,
            services: services,
            incidents: snapshot.incidents.map { Self.told($0, parked: parked.under($0), now: now) },
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
            classify: limits.classify.map(\.description),
            bandwidth: Self.bandwidth(sync.bandwidth)
        )
    }

    /// `sync.bandwidth` as `GetStatus` tells it.
    static func bandwidth(_ limiter: BandwidthLimiter) -> Control.Bandwidth {
        let (rate, until) = limiter.current
        return Control.Bandwidth(setting: limiter.bandwidth.description, bytesPerSecond: rate.map { Int($0) }, until: until.map(ControlTime.format))
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
        let parked = try storeCall { () throws(StoreError) in try ParkedJobs(snapshot, store: store) }
        var incidents = snapshot.incidents.map { Self.told($0, parked: parked.under($0), now: now) }
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
            // Those the bus holds (other services'), then sync's, parked in the store.
            let held = ((try? await bus.parkedJobs(in: incidentID)) ?? []).map { Control.JobName(id: $0.id, service: $0.service, name: $0.name) }
            let stored = try storeCall { () throws(StoreError) in try store.parkedJobs(under: UInt64(id), limit: 1000) }
            let counts = try storeCall { () throws(StoreError) in try store.parkedCounts() }
            return Control.IncidentDetail(
                incident: Self.told(open, parked: ParkedJobs.under(open, stored: counts), now: Date()),
                parked: Array((held + stored.map { Control.JobName(id: $0.id, service: $0.service, name: $0.fileName) }).prefix(1000))
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

    /// The store's jobs: it keeps every sync job, and where it waits.
    func jobs(_ filter: Control.JobFilter) async throws -> Control.JobList {
        let limit = min(max(filter.limit ?? 100, 0), 1000)
        let offset = max(0, filter.offset ?? 0)
        return try storeCall { () throws(StoreError) in
            let counts = try store.counts(service: filter.service)
            let state = filter.state.flatMap { JobState(rawValue: $0.rawValue) }
            let jobs = try store.jobs(service: filter.service, state: state, offset: offset, limit: limit)
            return Control.JobList(jobs: jobs.map { Control.Job($0) }, total: state.map { counts[$0] } ?? counts.total)
        }
    }

    /// An open incident as an operator is told it: the bus's, with its parked jobs counted by
    /// ``ParkedJobs`` (the bus's and the store's).
    static func told(_ incident: IncidentSnapshot, parked: Int, now: Date) -> Control.Incident {
        var told = Control.Incident(incident, now: now)
        told.parked = parked
        return told
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
            // A parked job goes when its incident does, which takes its next step now.
            let job = try storeCall { () throws(StoreError) in try store.job(id) }
            if job?.state == .parked, let incident = job?.incident.map(IncidentID.init(rawValue:)),
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
            // Its parked jobs first: the incident's end would release them.
            let stored = try storeCall { () throws(StoreError) in try store.discardParked(UInt64(id), reason: "discarded by an operator") }
            do {
                let parked = try await bus.discard(incident: IncidentID(rawValue: UInt64(id)))
                return Control.Count(count: parked + stored + dead.count)
            } catch {
                guard !dead.isEmpty || stored > 0 else { throw Control.noSuchIncident.error(.init(id: id)) }
                return Control.Count(count: stored + dead.count)
            }
        case .job(let given):
            let id = try await resolve(job: given, service: SyncService.service)
            if try storeCall({ () throws(StoreError) in try store.discardDeadLetter(id) }) != nil {
                return Control.Count(count: 1)
            }
            // A job being uploaded stops when its run ends (a run that succeeds stands); sync
            // records it discarded.
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
    /// `Control.minimumJobIDPrefix` characters). When no job's does, `given` (the method answers
    /// `NoSuchJob`); when several jobs' do, `AmbiguousJob`.
    func resolve(job given: String, service: String) async throws -> String {
        if try storeCall({ () throws(StoreError) in try store.job(given) })?.service == service { return given }
        guard given.count >= Control.minimumJobIDPrefix else { return given }
        let stored = try storeCall { () throws(StoreError) in
            try store.jobs(idPrefix: given, service: service, limit: Self.ambiguityCandidates)
        }
        let candidates = stored.jobs.map { Control.JobName(id: $0.id, service: $0.service, name: $0.fileName) }.sorted { $0.id < $1.id }
        switch stored.total {
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
