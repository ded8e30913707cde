import ErrorBusUnits
import AsyncHTTPClient
import ErrorBus
import ErrorBusHTTP
import ErrorBusStore
import ErrorBusSupport
#if canImport(Glibc)
import Glibc
#endif
import Foundation
import Logging
import Metrics
import NIOPosix
import ServiceLifecycle
import Synchronization

/// Uploads every file that arrives in the outbox, at least once, never losing one.
///
/// ``OutboxIngest`` turns files into durable jobs before anything else happens to them. This
/// service dispatches them: it claims queued jobs, hands each to the bus with `submit`, so a job
/// that fails is parked by the bus (without a waiting task) and released when its incident's
/// cause is gone, and records what became of each job, removing the file once it is delivered.
/// It has no retry, back-off or login logic of its own: it only bounds how many uploads it starts
/// at once, and starts none while an incident holds its jobs back (``ErrorBus/holdsBack(_:)``):
/// then the store is the queue, and the bus holds only the runs that met the incident, however
/// long the outage and however many files wait.
actor SyncService: Service {
    /// What the service needs to know, from the daemon's configuration.
    struct Settings: Sendable, Equatable {
        var outbox: String
        var afterDelivery: AfterDelivery
        var concurrency: Int
        /// `sync.parked-in-memory`: how many jobs the bus may hold while an incident holds
        /// uploads back; the others wait in the store.
        var parkedInMemory = DaemonConfiguration.Sync().parkedInMemory
        var maxFileSize: Int64
        var rescanInterval: Duration
        var settleTime: Duration
        /// How the API takes an upload, its URL absolute.
        var upload = UploadContract()
        /// The upload URL's origin: the scope of the uploads on the bus.
        var scope: String
        var realm: String
        var requestTimeout: Duration
        var classify: [ClassificationOverride] = []
        var maxAge: Duration?
        var backlog = DaemonConfiguration.Sync.Backlog()
        var deadLetters = DaemonConfiguration.Sync.DeadLetters()
        var deliveredRetention: Duration? = nil
        /// `state.min-free-space`, which uploads paused by a full disk wait for.
        var minFreeSpace: Int64 = DaemonConfiguration.State().minFreeSpace

        var ingest: OutboxIngest.Settings {
            OutboxIngest.Settings(
                outbox: outbox,
                maxFileSize: maxFileSize,
                rescanInterval: rescanInterval,
                settleTime: settleTime,
                scope: scope,
                backlog: backlog,
                keyedByName: upload.tellsFilesByName
            )
        }
    }

    static let service = "sync"

    /// While the bus's parking is full, new jobs wait this long before the next try.
    static let parkingFullPause = Duration.seconds(1)

    private(set) var settings: Settings
    let store: JobStore
    let bus: ErrorBus
    let clock: Timeline
    /// The date, on the same clock: the ages and cut-offs sync measures.
    let wallClock: WallClock
    let logger: Logger
    private let ingest: OutboxIngest
    let storeFailures: StoreFailures
    private let duplicates: DuplicateFiles
    let removal: DeliveredFileRemoval
    /// Jobs whose file was written again with other content while they were under way or held.
    private nonisolated let replaced: ReplacedJobs
    /// What each upload read of its job's file, until the job's outcome is recorded.
    private nonisolated let readFiles = ReadFiles()
    /// Files delivered (swift-metrics).
    private let deliveries = Counter(label: "errorbus_sync_delivered_total")
    /// Attempts each delivered file took, this run's and those recorded before (a histogram).
    private let deliveryAttempts = Recorder(label: SyncService.deliveryAttemptsMetric, aggregate: true)
    /// Time from a file's arrival (queued) to its delivery (a histogram, in seconds).
    private let deliveryDelay = Metrics.Timer(label: SyncService.deliveryDelayMetric)
    /// Files older than `sync.max-age` set aside instead of uploaded.
    private let expired = Counter(label: "errorbus_sync_expired_files_total")
    static let deliveryAttemptsMetric = "errorbus_sync_delivery_attempts"
    static let deliveryDelayMetric = "errorbus_sync_delivery_delay_seconds"
    /// The overflow of the backlog under way and the files it left in the outbox, shared with the
    /// ingest.
    let overflow: BacklogOverflow
    /// The outbox files the store refused to queue, shared with the ingest.
    let unqueued: UnqueuedFiles
    /// When a file was last delivered, for the health check.
    let progress = DeliveryProgress()
    /// When the retention is applied next, and what of it the journal has yet to hear.
    var retention = RetentionSchedule()
    /// `sync.max-age`, read by every attempt, parked ones included, so a reload applies to them.
    private let maxAge: AgeLimit
    /// Makes the uploader for the current settings; one uploader is shared by every job.
    private let makeUploader: @Sendable (Settings) -> any Uploading
    private var uploader: any Uploading
    var state: DispatchState
    /// The jobs the bus still had when this service stopped (parked, waiting for the retry
    /// budget, or being run again by it): the daemon tells them apart from first uploads its
    /// drain timeout cut off.
    private(set) var heldByBusAtStop = 0
    private let wakeups: AsyncStream<Void>
    private let wake: AsyncStream<Void>.Continuation

    /// The service errorbusd runs: real uploads over `http`, on the continuous clock.
    init(settings: Settings, store: JobStore, bus: ErrorBus, auth: AuthService, http: HTTPClient, logger: Logger) {
        self.init(settings: settings, store: store, bus: bus, clock: ContinuousClock(), logger: logger) { settings in
            Uploader(http: http, auth: auth, bus: bus, settings: settings)
        }
    }

    /// A service reading and sleeping on `clock`, uploading with what `makeUploader` makes.
    init(
        settings: Settings,
        store: JobStore,
        bus: ErrorBus,
        clock: some Clock<Duration>,
        logger: Logger,
        makeUploader: @escaping @Sendable (Settings) -> any Uploading
    ) {
        let timeline = Timeline(clock)
        let wallClock = WallClock(clock)
        let seen = SeenFiles()
        let duplicates = DuplicateFiles()
        let replaced = ReplacedJobs()
        let leases = WriterLeases(logger: logger)
        let removal = DeliveredFileRemoval(afterDelivery: settings.afterDelivery, seen: seen, leases: leases, logger: logger)
        let (wakeups, wake) = AsyncStream.makeStream(of: Void.self, bufferingPolicy: .bufferingNewest(1))
        let overflow = BacklogOverflow(logger: logger, clock: wallClock)
        let unqueued = UnqueuedFiles()
        let storeFailures = StoreFailures(bus: bus, logger: logger, minFreeSpace: settings.minFreeSpace)
        self.storeFailures = storeFailures
        self.overflow = overflow
        self.unqueued = unqueued
        self.settings = settings
        self.store = store
        self.bus = bus
        self.clock = timeline
        self.wallClock = wallClock
        self.logger = logger
        self.duplicates = duplicates
        self.replaced = replaced
        self.removal = removal
        self.makeUploader = makeUploader
        self.uploader = makeUploader(settings)
        self.state = DispatchState(concurrency: settings.concurrency, parkedInMemory: settings.parkedInMemory)
        self.maxAge = AgeLimit(settings.maxAge)
        self.wakeups = wakeups
        self.wake = wake
        self.ingest = OutboxIngest(
            settings: settings.ingest,
            store: store,
            bus: bus,
            clock: timeline,
            wallClock: wallClock,
            seen: seen,
            duplicates: duplicates,
            replaced: replaced,
            overflow: overflow,
            unqueued: unqueued,
            storeFailures: storeFailures,
            leases: leases,
            logger: logger,
            deliveredFiles: { path, fileName, read in removal.remove(path, fileName: fileName, read: read) },
            queued: { wake.yield() }
        )
        // Counted from 0, so that a query's increase() sees the first one.
        for limit in ["max_count", "max_age"] {
            Counter(label: "errorbus_sync_dead_letters_pruned_total", dimensions: [("limit", limit)]).increment(by: 0)
        }
        Counter(label: "errorbus_jobs_dead_lettered_total", dimensions: [("service", Self.service), ("category", "overflow")]).increment(by: 0)
    }

    /// Takes files in and uploads them, until graceful shutdown; then takes no new job, lets the
    /// uploads under way finish (the service group's shutdown deadline cancels any that take
    /// longer) and makes sure every state change is on disk.
    func run() async throws {
        await reconcileFiles()
        // Jobs queued before a restart go first.
        wake.yield()
        try await withThrowingDiscardingTaskGroup { group in
            group.addTask { try await self.ingest.run() }
            group.addTask { await self.dispatch() }
            group.addTask { await self.wakeWhenReleased() }
        }
        heldByBusAtStop = state.withTheBus
        do {
            try await store.flush()
        } catch {
            // When shutdown.drain-timeout ran out, it cancelled this task with the uploads: the
            // daemon flushes once every service has stopped (Daemon.stop), uncancelled.
            guard Task.isCancelled else { throw error }
        }
        logger.info("sync stopped", metadata: ["held": "\(state.held)"])
    }

    /// After a power loss, a delivered job's record may have rolled back while its file's
    /// removal did not: such jobs have no file left to send, and are discarded before uploads
    /// begin. A walk of every pending job and its file, off the cooperative threads, while the
    /// daemon already answers its control socket.
    private func reconcileFiles() async {
        let store = store
        do {
            let vanished = try await NIOThreadPool.singleton.runIfActive {
                // A file that cannot be looked at (a permission) is there: only its absence discards.
                try store.reconcileFiles { job in (try? SystemCall.stat(job.path)).map { $0 != nil } ?? true }
            }
            if !vanished.isEmpty { logger.warning("\(vanished.count) queued jobs had lost their files and were discarded") }
        } catch {
            await storeFailures.report(error, doing: "reconcile the queued jobs with the outbox")
        }
    }

    /// Applies new settings (a reload). Jobs already queued keep their state; the outbox stays
    /// the one watched since the start (the reload says so).
    func update(_ settings: Settings) async {
        var settings = settings
        settings.outbox = self.settings.outbox
        self.settings = settings
        state.concurrency = settings.concurrency
        state.parkedInMemory = settings.parkedInMemory
        maxAge.limit = settings.maxAge
        removal.afterDelivery = settings.afterDelivery
        uploader = makeUploader(settings)
        await ingest.update(settings.ingest)
        wake.yield()
    }

    /// Looks at the queue again now: an operator queued dead letters again.
    func wakeUp() {
        wake.yield()
    }

    /// The shape of every job this service submits, for asking the bus whether it holds them
    /// back: they share the service, scope and realm.
    private var anyJob: Job {
        Job(id: "", service: Self.service, scope: settings.scope, realm: settings.realm)
    }

    /// Whether an open incident holds this service's jobs back: then those queued wait in the
    /// store, behind it, as those parked wait in the bus. The bus's to tell.
    var isHeldBack: Bool {
        bus.holdsBack(anyJob)
    }

    /// The queued jobs an incident holds back, and which incident; `nil` when none does. The
    /// bus tells whether one does and which, the store how many wait.
    func heldQueue() async -> HeldQueue? {
        guard isHeldBack else { return nil }
        let queued = (try? store.counts(service: Self.service).queued) ?? 0
        return HeldQueue(service: Self.service, incident: await bus.holdingIncident(of: anyJob), jobs: queued)
    }

    /// Wakes the dispatcher when an incident's cause is gone or it ends: the jobs it held back
    /// may go. (A rescan wakes it too, should an event be missed.) And records in the store each
    /// job the bus sets aside on its own, so that a restart keeps it aside.
    private nonisolated func wakeWhenReleased() async {
        let subscription = await bus.subscribe()
        for await event in subscription.cancelOnGracefulShutdown() {
            switch event.kind {
            case .releaseStarted, .incidentResolved:
                wake.yield()
            case .jobIsolated:
                guard let job = event.job, job.service == Self.service else { continue }
                await isolated(job)
            default:
                continue
            }
        }
    }

    /// Records that the bus set `job` aside on its own.
    private func isolated(_ job: Job) async {
        do {
            try store.markIsolated(job.id, ownFailures: job.failedOnItsOwn + 1)
        } catch {
            await storeFailures.report(error, doing: "record that \(job.name ?? job.id) fails on its own")
        }
    }

    /// The outbox files errorbusd cannot read, oldest first.
    var unreadableFiles: [UnreadableFile] {
        get async { await ingest.unreadableFiles }
    }

    /// The backlog's limits and the `api.classify` rules in force, and how many outbox files wait
    /// for room in the backlog.
    var limits: (backlog: DaemonConfiguration.Sync.Backlog, classify: [ClassificationOverride], rejectedFiles: Int) {
        (settings.backlog, settings.classify, overflow.waitingForRoom)
    }

    // MARK: - Dispatching

    private func dispatch() async {
        await withDiscardingTaskGroup { uploads in
            for await _ in wakeups.cancelOnGracefulShutdown() {
                await recordUnrecorded()
                let due = retention.due(at: clock.now())
                if due.deadLetters { await pruneDeadLetters() }
                if due.delivered { await forgetDelivered() }
                if settings.backlog.dropsOldest {
                    await makeRoom()
                } else if overflow.isOngoing, let backlog = try? store.backlog(service: Self.service) {
                    // Deliveries make room: the overflow may be over.
                    overflow.endIfUnder(backlog, settings.backlog)
                }
                let claimed = state.heldBack(isHeldBack)
                if !claimed.isEmpty { await unclaim(claimed) }
                while let job = state.start(at: clock.now()) {
                    let (upload, uploader) = (OutboxFile(job), uploader)
                    var busJob = Job(id: job.id, service: Self.service, scope: settings.scope, realm: settings.realm, name: job.fileName)
                    busJob.failedOnItsOwn = job.ownFailures
                    let history = JobHistory(queuedAt: job.createdAt, attempts: job.attempts)
                    uploads.addTask { await self.submit(upload, as: busJob, history: history, with: uploader) }
                }
                if let resume = state.resumeToSchedule() {
                    let (clock, wake) = (clock, wake)
                    uploads.addTask {
                        guard (try? await clock.sleep(resume)) != nil else { return }
                        wake.yield()
                    }
                }
                if state.startsClaim() {
                    uploads.addTask { await self.claim() }
                }
            }
        }
    }

    /// Gives jobs claimed before their scope was held back to the store's queue: they wait there
    /// with the rest. If the store cannot take them, they stay in flight in it until the next
    /// start queues them again; nothing is lost.
    private func unclaim(_ jobs: [OutboxJob]) async {
        do {
            try store.unclaim(jobs.map(\.id))
        } catch {
            await storeFailures.report(error, doing: "give \(jobs.count) claimed jobs back to the queue")
        }
    }

    /// Claims queued jobs for the dispatcher, and wakes it when there is something to start or
    /// to claim again.
    private func claim() async {
        logger.debug("claiming queued jobs", metadata: ["uploading": "\(state.running)", "claimed": "\(state.pending.count)"])
        var claimed: [OutboxJob] = []
        do {
            claimed = try await store.claimQueued(limit: state.claimLimit)
        } catch {
            await storeFailures.report(error, doing: "claim queued outbox files")
        }
        if state.claimed(claimed) { wake.yield() }
    }

    /// Hands a job to the bus. What the two closures capture stays in memory for as long as the
    /// bus holds the job parked: an `OutboxFile`, its history and a few references, not the whole
    /// stored job.
    private nonisolated func submit(_ job: OutboxFile, as busJob: Job, history: JobHistory, with uploader: any Uploading) async {
        let (maxAge, replaced, wallClock, readFiles) = (self.maxAge, self.replaced, self.wallClock, self.readFiles)
        let submission = await bus.submit(busJob) {
            if let failure = replaced.take(job.id) {
                // Its file holds other content now, a job of its own: nothing to send.
                throw JobStopped(evaluation: .cancel, reason: .superseded, failure: failure)
            }
            history.runs.add(1, ordering: .relaxed)
            if let limit = maxAge.limit {
                let age = Duration.seconds(wallClock.now().timeIntervalSince(history.queuedAt))
                if age > limit { throw JobTooOld(job: job, age: age, limit: limit) }
            }
            readFiles.record(job.id, try await uploader.upload(job))
        } completion: { outcome in
            await self.finished(job, history, outcome)
        }
        await submitted(job, history, submission)
    }

    /// Records what the first run of a job came to.
    private func submitted(_ job: OutboxFile, _ history: JobHistory, _ submission: Submission) async {
        state.firstRunEnded()
        // The slot is free: the next upload starts while this one's outcome is recorded (a
        // delivery waits a few milliseconds for others to share its commit).
        wake.yield()
        switch submission {
        case .completed:
            delivered(history)
            await finish(job, .succeeded, runs: history.runs.load(ordering: .relaxed))
        case .parked(let incident):
            state.handedToBus()
            // The bus holds it now, and is the one to ask where (it may park it again under
            // another incident): the store keeps it in flight until its outcome.
            logger.debug("\(job.fileName) parked under incident \(incident.map { "\($0)" } ?? "none (retry budget)")")
        case .stopped(let stopped):
            await finish(job, .stopped(stopped), runs: history.runs.load(ordering: .relaxed))
        }
    }

    // MARK: - Recording

    /// Records the final outcome of a job the bus held.
    private func finished(_ job: OutboxFile, _ history: JobHistory, _ outcome: JobOutcome) async {
        state.backFromBus()
        if case .succeeded = outcome { delivered(history) }
        await finish(job, outcome, runs: history.runs.load(ordering: .relaxed))
        wake.yield()
    }

    /// Records what became of a job; an outcome the store cannot take now waits in `unrecorded`.
    /// `runs`: how many uploads its submission made.
    private func finish(_ job: OutboxFile, _ outcome: JobOutcome, runs: Int) async {
        if await !record(job, outcome, runs: runs) { state.unrecorded.append((job, outcome, runs)) }
    }

    /// Records an outcome; false when the store could not take it (and that is reported).
    private func record(_ job: OutboxFile, _ outcome: JobOutcome, runs: Int) async -> Bool {
        let recorded =
            switch outcome {
            case .succeeded: await delivered(job)
            case .stopped(let stopped): await ended(job, stopped, runs: runs)
            }
        if recorded {
            state.recorded()
            readFiles.forget(job.id)
        }
        return recorded
    }

    /// Records the outcomes the store could not take before, oldest first, and stops at the
    /// first it still cannot take: one failed write and one report per try, not one per job.
    private func recordUnrecorded() async {
        guard !state.unrecorded.isEmpty else { return }
        let waiting = state.unrecorded
        state.unrecorded = []
        for (index, (job, outcome, runs)) in waiting.enumerated() where await !record(job, outcome, runs: runs) {
            state.unrecorded = Array(waiting[index...]) + state.unrecorded
            return
        }
        // Jobs queued again may go.
        wake.yield()
    }

    private func delivered(_ job: OutboxFile) async -> Bool {
        do {
            _ = try await store.markDelivered(job.id)
            deliveries.increment()
            progress.record(at: wallClock.now())
        } catch {
            // The API has it; the file stays until the store has it too (or, after a restart,
            // a second upload is absorbed by its idempotency key).
            await storeFailures.report(error, doing: "record \(job.fileName) as delivered")
            return false
        }
        // Only the file whose bytes were sent: one written since stays, and is taken again.
        if removal.remove(job.path, fileName: job.fileName, read: readFiles.read(of: job.id)) == .leftChanged {
            await ingest.retake(job.fileName)
        }
        for path in duplicates.take(for: job.id) {
            let name = String(path.split(separator: "/").last ?? "")
            if removal.remove(path, fileName: name, read: nil) == .leftChanged { await ingest.retake(name) }
        }
        return true
    }

    /// Records the delivery's attempts and delay, once per delivered job.
    private func delivered(_ history: JobHistory) {
        deliveryAttempts.record(history.attempts + history.runs.load(ordering: .relaxed))
        deliveryDelay.recordSeconds(max(0, wallClock.now().timeIntervalSince(history.queuedAt)))
    }

    private func ended(_ job: OutboxFile, _ stopped: JobStopped, runs: Int) async -> Bool {
        do {
            switch stopped.reason {
            case .deadLettered:
                let reason = stopped.failure.map { "\($0.text.title): \($0.text.message)" } ?? "rejected"
                // Its attempts are the uploads it made: one set aside for room before it was
                // ever sent keeps none, and no retention removes its file.
                try store.markDeadLettered(job.id, reason: reason, incident: stopped.incident?.rawValue, attempts: runs)
                if stopped.failure?.cause == JobTooOld.cause { expired.increment() }
                setAside([job.fileName], reason)
                if try store.counts(service: Self.service).deadLettered > settings.deadLetters.maxCount {
                    retention.wentOverCount()
                    wake.yield()
                }
            case .discarded, .cancelledByOperator:
                // An incident's jobs given up, or one parked job taken out (cancel, discard --job):
                // either way discarded, its state says, and said so in words.
                try store.markDiscarded(job.id, reason: "discarded by an operator")
            case .superseded:
                // Its file now holds other content, which is a job of its own.
                let text = stopped.failure?.text ?? OperatorText(title: "Replaced before it was sent", message: "\(job.fileName) was replaced after it was queued.")
                logger.notice("\(text.title): \(text.message) \(text.next ?? "")")
                try store.markDiscarded(job.id, reason: "\(text.title): \(text.message)")
            case .parkingFull:
                try store.markQueued(job.id, lastError: "parking full")
                state.parkingFull(at: clock.now(), pause: Self.parkingFullPause)
            case .shutdown, .taskCancelled:
                // Stays in flight in the store: the next start queues it again.
                break
            default:
                try store.markQueued(job.id, lastError: stopped.description)
            }
        } catch {
            await storeFailures.report(error, doing: "record what became of \(job.fileName)")
            return false
        }
        return true
    }
}
