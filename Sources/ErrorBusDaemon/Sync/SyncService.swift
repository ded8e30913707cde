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
/// service dispatches them: it claims queued jobs, runs each through the bus
/// (``ErrorBus/run(_:operation:)``), and records the bus's verdict in the store: delivered (and
/// its file removed), parked under an incident, queued again after a back-off, or set aside. The
/// store is the one queue: a job waiting on an incident is a `parked` row and nothing else, and
/// the bus asks this service for one as the incident's canary, and tells it when the incident
/// releases them (``ParkedJobSource``). It has no retry, back-off or login logic of its own: it
/// bounds how many uploads it runs at once, and claims none while an incident holds its uploads
/// back (``ErrorBus/holdsBack(_:)``), however long the outage and however many files wait.
actor SyncService: Service, ParkedJobSource {
    /// What the service needs to know, from the daemon's configuration.
    struct Settings: Sendable, Equatable {
        var outbox: String
        var afterDelivery: AfterDelivery
        var concurrency: Int
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
        var bandwidth = Bandwidth.unlimited
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
                uploads: Job(id: "", service: SyncService.service, scope: scope, realm: realm),
                backlog: backlog,
                keyedByName: upload.tellsFilesByName
            )
        }
    }

    static let service = "sync"

    private(set) var settings: Settings
    let store: JobStore
    let bus: ErrorBus
    let clock: Timeline
    /// The date, on the same clock: the ages and cut-offs sync measures.
    let wallClock: WallClock
    let logger: Logger
    private let ingest: OutboxIngest
    let storeFailures: StoreFailures
    /// The uploads incidents hold back, shared with the ingest.
    private let parkedUploads: ParkedUploads
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
    /// Paces upload bodies to `sync.bandwidth`, all uploads together.
    let bandwidth: BandwidthLimiter
    /// Makes the uploader for the current settings; one uploader is shared by every job.
    private let makeUploader: @Sendable (Settings) -> any Uploading
    private var uploader: any Uploading
    var state: DispatchState
    /// Whether a job ended without a delivery since the last look for uploads in parts to abort.
    private var uploadsAbandoned = false
    /// The bus's releases waiting for their jobs to have run.
    private let releaseWaits = ReleaseWaits()
    private let wakeups: AsyncStream<Void>
    private let wake: AsyncStream<Void>.Continuation

    /// The service errorbusd runs: real uploads over `http`, on the continuous clock.
    init(settings: Settings, store: JobStore, bus: ErrorBus, auth: AuthService, http: RoutedHTTPClient, logger: Logger) {
        let limiter = BandwidthLimiter(settings.bandwidth, clock: Timeline(ContinuousClock()))
        self.init(settings: settings, store: store, bus: bus, clock: ContinuousClock(), bandwidth: limiter, logger: logger) { settings in
            Uploader(http: http, auth: auth, bus: bus, store: store, settings: settings, bandwidth: limiter, logger: logger)
        }
    }

    /// A service reading and sleeping on `clock`, uploading with what `makeUploader` makes.
    init(
        settings: Settings,
        store: JobStore,
        bus: ErrorBus,
        clock: some Clock<Duration>,
        bandwidth: BandwidthLimiter? = nil,
        logger: Logger,
        makeUploader: @escaping @Sendable (Settings) -> any Uploading
    ) {
        let timeline = Timeline(clock)
        self.bandwidth = bandwidth ?? BandwidthLimiter(settings.bandwidth, clock: timeline)
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
        let parkedUploads = ParkedUploads(store: store, bus: bus, storeFailures: storeFailures, logger: logger, wake: wake)
        self.parkedUploads = parkedUploads
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
        self.state = DispatchState(concurrency: settings.concurrency)
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
            parkedUploads: parkedUploads,
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
        await bus.setParkedJobSource(self, forService: Self.service)
        await reconcileFiles()
        // Uploads in parts whose job ended while errorbusd was stopped (or before an abort got
        // through): the store keeps their parts until they are aborted.
        await abortAbandonedUploads()
        // The jobs parked under the last run's incidents, which ended with it: known before this
        // run parks any.
        let lastRuns = await parkedByLastRun()
        // Jobs queued before a restart go first.
        wake.yield()
        try await withThrowingDiscardingTaskGroup { group in
            group.addTask { try await self.ingest.run() }
            group.addTask { await self.dispatch() }
            group.addTask { await self.wakeWhenReleased() }
            group.addTask {
                // Queued again a chunk at a time, while uploads go: a cause still there parks
                // them again under an incident of this run.
                for incident in lastRuns { await self.requeue(incident) }
            }
        }
        do {
            try await store.flush()
        } catch {
            // When shutdown.drain-timeout ran out, it cancelled this task with the uploads: the
            // daemon flushes once every service has stopped (Daemon.stop), uncancelled.
            guard Task.isCancelled else { throw error }
        }
        logger.info("sync stopped", metadata: ["unrecorded": "\(state.unrecorded.count)"])
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
                try store.reconcileFiles { job in
                    do { return try SystemCall.stat(job.path) != nil } catch { return true }
                }
            }
            if !vanished.isEmpty { logger.warning("\(vanished.count) queued jobs had lost their files and were discarded") }
        } catch {
            await storeFailures.report(error, doing: "reconcile the queued jobs with the outbox")
        }
    }

    /// The incidents of the last run with jobs still parked under them.
    private func parkedByLastRun() async -> [IncidentID] {
        do {
            return try store.parkedCounts().keys.sorted().map(IncidentID.init(rawValue:))
        } catch {
            // They stay parked until the next start.
            await storeFailures.report(error, doing: "read the jobs parked by the last run")
            return []
        }
    }

    /// Applies new settings (a reload). Jobs already queued keep their state; the outbox stays
    /// the one watched since the start (the reload says so).
    func update(_ settings: Settings) async {
        var settings = settings
        settings.outbox = self.settings.outbox
        self.settings = settings
        state.concurrency = settings.concurrency
        maxAge.limit = settings.maxAge
        if bandwidth.bandwidth != settings.bandwidth {
            bandwidth.bandwidth = settings.bandwidth
            logger.notice("sync.bandwidth is now \(settings.bandwidth), for the uploads under way too")
        }
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
        settings.ingest.uploads
    }

    /// Whether an open incident (or the bus's stop) holds this service's uploads back. The
    /// bus's to tell.
    private var isHeldBack: Bool {
        bus.holdsBack(anyJob)
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
                if uploadsAbandoned {
                    uploadsAbandoned = false
                    uploads.addTask { await self.abortAbandonedUploads() }
                }
                if settings.backlog.dropsOldest {
                    await makeRoom()
                } else if overflow.isOngoing, let backlog = try? store.backlog(service: Self.service) {
                    // Deliveries make room: the overflow may be over.
                    overflow.endIfUnder(backlog, settings.backlog)
                }
                while let job = state.start() {
                    let run = upload(OutboxFile(job), as: busJob(job), history: JobHistory(queuedAt: job.createdAt, attempts: job.attempts))
                    uploads.addTask {
                        await self.ran(run.job, run.history, await self.bus.run(run.busJob, operation: run.operation))
                    }
                }
                if let retry = state.retryWake(at: clock.now()) {
                    let (clock, wake) = (clock, wake)
                    uploads.addTask {
                        // Not a reason to hold the stop: the job waits in the store.
                        guard (try? await cancelWhenGracefulShutdown({ try await clock.sleep(retry) })) != nil else { return }
                        wake.yield()
                    }
                }
                if isHeldBack {
                    await parkHeldBack()
                } else if state.startsClaim() {
                    uploads.addTask { await self.claim() }
                }
                resumeRanReleases()
            }
            // Nothing is taken from the queue any more.
            releaseWaits.end()
        }
    }

    /// How the bus knows a job: its service, scope and realm, and whether it failed on its own
    /// before.
    private func busJob(_ job: OutboxJob) -> Job {
        var busJob = Job(id: job.id, service: Self.service, scope: settings.scope, realm: settings.realm, name: job.fileName)
        busJob.failedOnItsOwn = job.ownFailures
        return busJob
    }

    /// One run of a job: what the bus runs (what it captures lives only as long as the run).
    private func upload(_ job: OutboxFile, as busJob: Job, history: JobHistory) -> (job: OutboxFile, busJob: Job, history: JobHistory, operation: @Sendable () async throws -> Void) {
        let (maxAge, replaced, wallClock, readFiles, uploader) = (self.maxAge, self.replaced, self.wallClock, self.readFiles, self.uploader)
        return (job, busJob, history, {
            if let failure = replaced.take(job.id) {
                // Its file holds other content now, a job of its own: nothing to send.
                throw JobStopped(evaluation: .cancel, reason: .superseded, failure: failure)
            }
            history.runs.add(1, ordering: .relaxed)
            if let limit = maxAge.limit {
                let age = Duration.seconds(wallClock.now().timeIntervalSince(history.queuedAt))
                if age > limit { throw JobTooOld(job: job, age: age, limit: limit) }
            }
            readFiles.record(job.id, try await uploader.upload(job, queuedAt: history.queuedAt))
        })
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

    /// An upload the dispatcher started ended with `verdict`: its slot is free, and the verdict
    /// is recorded.
    private func ran(_ job: OutboxFile, _ history: JobHistory, _ verdict: Verdict) async {
        state.uploadEnded()
        // The next upload starts while this one's verdict is recorded (a delivery waits a few
        // milliseconds for others to share its commit).
        wake.yield()
        await finish(job, history, verdict)
    }

    // MARK: - The bus's parked jobs

    /// Runs the next job parked under `incident` as its canary, and records its verdict; `nil`
    /// when none is parked under it.
    func runOne(parkedUnder incident: IncidentID, as canary: CanaryRun) async -> Verdict? {
        let taken: OutboxJob?
        do {
            taken = try store.takeParked(under: incident.rawValue)
        } catch {
            await storeFailures.report(error, doing: "take a job parked under incident \(incident)")
            return nil
        }
        guard let job = taken else { return nil }
        let run = upload(OutboxFile(job), as: busJob(job), history: JobHistory(queuedAt: job.createdAt, attempts: job.attempts))
        let verdict = await canary.run(run.busJob, operation: run.operation)
        await finish(run.job, run.history, verdict)
        return verdict
    }

    /// `incident`'s cause is gone: the jobs parked under it are queued again, in their places.
    /// Those that failed under it go a moment later, behind those that merely waited (as the
    /// bus releases its own): after an incident its scope serves one upload at a time until
    /// one succeeds, and a file that fails on its own (a request that hangs) must not be it.
    ///
    /// Returns once they have run, and the jobs queued before them: the verdict of each recorded,
    /// or parked again (by the dispatcher's events, ``ReleaseWaits``).
    func release(_ incident: IncidentID) async {
        let mark: JobStore.ReleaseMark?
        do {
            mark = try store.releaseMark()
        } catch {
            await storeFailures.report(error, doing: "read where the queue stands to release incident \(incident)")
            mark = nil
        }
        await requeue(incident)
        guard let mark else { return }
        await releaseWaits.wait(for: mark, hasRun: hasRun)
    }

    /// Queues the jobs parked under `incident` again, those that failed under it a moment
    /// behind the others.
    private func requeue(_ incident: IncidentID) async {
        await parkedUploads.release(incident, failedBackOff: Self.failedReleaseDelay)
        // The release woke the dispatcher for the others, maybe before this wake-up was known:
        // once more, so that it arms it.
        state.retry(at: clock.now().advanced(by: Self.failedReleaseDelay))
        wake.yield()
    }

    /// Whether every job queued at `mark` has run. A store that cannot say keeps the release
    /// waiting until the next event.
    private func hasRun(_ mark: JobStore.ReleaseMark) -> Bool {
        (try? store.hasRun(since: mark)) ?? false
    }

    /// Resumes the releases whose jobs have all run.
    private func resumeRanReleases() {
        guard !releaseWaits.isEmpty else { return }
        releaseWaits.resume(where: hasRun)
    }

    /// How long the jobs that failed under an incident wait behind the others at its release.
    static let failedReleaseDelay = Duration.seconds(1)

    /// While an incident holds the uploads back, the queued jobs wait under it as parked rows,
    /// moved there in bulk (the bus need not run each to say so); the bus learns it keeps them,
    /// to take one as its canary and release them all. Nothing is parked while the bus stops.
    private func parkHeldBack() async {
        // Most wake-ups during a hold find nothing queued (a canary's verdict, a rescan): one row
        // of `job_count` read says so, without a hop to the bus or an empty write.
        guard (try? store.counts(service: Self.service).queued) ?? 1 > 0,
            let incident = await bus.holdingIncident(of: anyJob)
        else { return }
        var parked = 0
        do {
            while true {
                let chunk = try await store.parkQueued(under: incident.rawValue, limit: ParkedUploads.chunk)
                parked += chunk
                if chunk < ParkedUploads.chunk { break }
            }
        } catch {
            // They wait in the queue instead, claimed once the incident ends.
            await storeFailures.report(error, doing: "park the queued jobs under incident \(incident)")
        }
        await parkedUploads.parked(parked, "queued", like: anyJob, under: incident)
    }

    // MARK: - Recording

    /// Records a verdict; one the store cannot take now waits in `unrecorded`.
    private func finish(_ job: OutboxFile, _ history: JobHistory, _ verdict: Verdict) async {
        if case .succeeded = verdict { delivered(history) }
        let runs = history.runs.load(ordering: .relaxed)
        if await !record(job, verdict, runs: runs) { state.unrecorded.append((job, verdict, runs)) }
        resumeRanReleases()
    }

    /// Records a verdict; false when the store could not take it (and that is reported).
    private func record(_ job: OutboxFile, _ verdict: Verdict, runs: Int) async -> Bool {
        let recorded: Bool
        switch verdict {
        case .succeeded:
            recorded = await delivered(job)
        case .parked(let incident, let failed):
            recorded = await parked(job, under: incident, failed: failed, runs: runs)
        case .retry(let delay):
            recorded = await requeued(job, after: delay)
        case .stopped(let stopped):
            recorded = await ended(job, stopped, runs: runs)
        }
        if recorded { readFiles.forget(job.id) }
        return recorded
    }

    /// Records the verdicts the store could not take before, oldest first, and stops at the
    /// first it still cannot take: one failed write and one report per try, not one per job.
    private func recordUnrecorded() async {
        guard !state.unrecorded.isEmpty else { return }
        let waiting = state.unrecorded
        state.unrecorded = []
        for (index, (job, verdict, runs)) in waiting.enumerated() where await !record(job, verdict, runs: runs) {
            state.unrecorded = Array(waiting[index...]) + state.unrecorded
            return
        }
        // Jobs queued again may go.
        wake.yield()
    }

    private func parked(_ job: OutboxFile, under incident: IncidentID, failed: Bool, runs: Int) async -> Bool {
        do {
            try store.markParked(job.id, incident: incident.rawValue, failed: failed, runs: runs)
        } catch {
            await storeFailures.report(error, doing: "park \(job.fileName) under incident \(incident)")
            return false
        }
        logger.debug("\(job.fileName) parked under incident \(incident)")
        return true
    }

    /// Queues a job its scope paced again, not to be claimed before its back-off is over; the
    /// dispatcher looks at the queue again then.
    private func requeued(_ job: OutboxFile, after delay: Duration) async -> Bool {
        do {
            try store.markQueued(job.id, lastError: "paced by its scope", retryAt: wallClock.now().addingTimeInterval(delay.timeInterval))
        } catch {
            await storeFailures.report(error, doing: "queue \(job.fileName) again")
            return false
        }
        logger.debug("\(job.fileName) paced by its scope: runs again in \(DurationText.format(delay))")
        state.retry(at: clock.now().advanced(by: delay))
        wake.yield()
        return true
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

    /// Aborts the uploads in parts whose job ended without a delivery.
    private func abortAbandonedUploads() async {
        let uploader = self.uploader
        for upload in await uploader.abortAbandonedUploads() {
            logger.info("aborted the multipart upload of job \(upload.jobID.prefix(12)): its job ended without a delivery")
        }
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
            case .shutdown, .taskCancelled:
                // Stays in flight in the store: the next start queues it again.
                break
            default:
                try store.markQueued(job.id, lastError: stopped.description)
            }
            // Only a file large enough to go in parts may have left an upload in the store.
            if [.deadLettered, .discarded, .cancelledByOperator, .superseded].contains(stopped.reason),
               let parts = settings.upload.parts, job.size > parts.above {
                uploadsAbandoned = true
                wake.yield()
            }
        } catch {
            await storeFailures.report(error, doing: "record what became of \(job.fileName)")
            return false
        }
        return true
    }
}
