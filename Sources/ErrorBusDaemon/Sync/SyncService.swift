import AsyncHTTPClient
import ErrorBus
import ErrorBusStore
import ErrorBusSupport
#if canImport(Glibc)
import Glibc
#endif
import Foundation
import Logging
import Metrics
import ServiceLifecycle
import Synchronization

/// Uploads every file that arrives in the outbox, at least once, never losing one.
///
/// ``OutboxIngest`` turns files into durable jobs before anything else happens to them. This
/// service dispatches them: it claims queued jobs, hands each to the bus with `submit`, so a job
/// that fails is parked by the bus (without a waiting task) and released when its incident's
/// cause is gone, and records what became of each job, removing the file once it is delivered.
/// It has no retry, back-off or login logic of its own: it only bounds how many uploads it starts
/// at once.
actor SyncService: Service {
    /// What the service needs to know, from the daemon's configuration.
    struct Settings: Sendable, Equatable {
        var outbox: String
        var afterDelivery: AfterDelivery
        var concurrency: Int
        var maxFileSize: Int64
        var rescanInterval: Duration
        var settleTime: Duration
        var itemsURL: String
        var host: String
        var realm: String
        var requestTimeout: Duration

        var ingest: OutboxIngest.Settings {
            OutboxIngest.Settings(outbox: outbox, maxFileSize: maxFileSize, rescanInterval: rescanInterval, settleTime: settleTime, host: host)
        }
    }

    static let service = "sync"

    /// While the bus's parking is full, new jobs wait this long before the next try.
    static let parkingFullPause = Duration.seconds(1)

    private var settings: Settings
    private let store: JobStore
    private let bus: ErrorBus
    private let clock: Timeline
    private let logger: Logger
    private let ingest: OutboxIngest
    private let duplicates: DuplicateFiles
    private let removal: DeliveredFileRemoval
    /// Files delivered (swift-metrics).
    private let deliveries = Counter(label: "errorbus_sync_delivered_total")
    /// Makes the uploader for the current settings; one uploader is shared by every job.
    private let makeUploader: @Sendable (Settings) -> any Uploading
    private var uploader: any Uploading
    private var state: DispatchState
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
        let seen = SeenFiles()
        let duplicates = DuplicateFiles()
        let removal = DeliveredFileRemoval(afterDelivery: settings.afterDelivery, seen: seen, logger: logger)
        let (wakeups, wake) = AsyncStream.makeStream(of: Void.self, bufferingPolicy: .bufferingNewest(1))
        self.settings = settings
        self.store = store
        self.bus = bus
        self.clock = timeline
        self.logger = logger
        self.duplicates = duplicates
        self.removal = removal
        self.makeUploader = makeUploader
        self.uploader = makeUploader(settings)
        self.state = DispatchState(concurrency: settings.concurrency)
        self.wakeups = wakeups
        self.wake = wake
        self.ingest = OutboxIngest(
            settings: settings.ingest,
            store: store,
            bus: bus,
            clock: timeline,
            seen: seen,
            duplicates: duplicates,
            logger: logger,
            deliveredFiles: { path, fileName in removal.remove(path, fileName: fileName) },
            queued: { wake.yield() }
        )
    }

    /// Takes files in and uploads them, until graceful shutdown; then takes no new job, lets the
    /// uploads under way finish (the service group's shutdown deadline cancels any that take
    /// longer) and makes sure every state change is on disk.
    func run() async throws {
        // Jobs queued before a restart go first.
        wake.yield()
        try await withThrowingDiscardingTaskGroup { group in
            group.addTask { try await self.ingest.run() }
            group.addTask { await self.dispatch() }
        }
        heldByBusAtStop = state.withTheBus
        try await store.flush()
        logger.info("sync stopped", metadata: ["held": "\(state.held)"])
    }

    /// Applies new settings (a reload). Jobs already queued keep their state; the outbox stays
    /// the one watched since the start (the reload says so).
    func update(_ settings: Settings) async {
        var settings = settings
        settings.outbox = self.settings.outbox
        self.settings = settings
        state.concurrency = settings.concurrency
        removal.afterDelivery = settings.afterDelivery
        uploader = makeUploader(settings)
        await ingest.update(settings.ingest)
        wake.yield()
    }

    /// Looks at the queue again now: an operator queued dead letters again.
    func wakeUp() {
        wake.yield()
    }

    /// The outbox files errorbusd cannot read, oldest first.
    var unreadableFiles: [UnreadableFile] {
        get async { await ingest.unreadableFiles }
    }

    // MARK: - Dispatching

    private func dispatch() async {
        await withDiscardingTaskGroup { uploads in
            for await _ in wakeups.cancelOnGracefulShutdown() {
                await recordUnrecorded()
                while let job = state.start(at: clock.now()) {
                    let (upload, uploader) = (OutboxFile(job), uploader)
                    let busJob = Job(id: job.id, service: Self.service, scope: settings.host, realm: settings.realm)
                    uploads.addTask { await self.submit(upload, as: busJob, with: uploader) }
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

    /// Claims queued jobs for the dispatcher, and wakes it when there is something to start or
    /// to claim again.
    private func claim() async {
        logger.debug("claiming queued jobs", metadata: ["uploading": "\(state.running)", "claimed": "\(state.pending.count)"])
        var claimed: [OutboxJob] = []
        do {
            claimed = try await store.claimQueued(limit: state.claimLimit)
        } catch {
            await StoreFailure.report(error, doing: "claim queued outbox files", bus: bus, logger: logger)
        }
        if state.claimed(claimed) { wake.yield() }
    }

    /// Hands a job to the bus. What the two closures capture stays in memory for as long as the
    /// bus holds the job parked: an `OutboxFile` and two references, not the whole stored job.
    private nonisolated func submit(_ job: OutboxFile, as busJob: Job, with uploader: any Uploading) async {
        let submission = await bus.submit(busJob) {
            try await uploader.upload(job)
        } completion: { outcome in
            await self.finished(job, outcome)
        }
        await submitted(job, submission)
    }

    /// Records what the first run of a job came to.
    private func submitted(_ job: OutboxFile, _ submission: Submission) async {
        state.firstRunEnded()
        // The slot is free: the next upload starts while this one's outcome is recorded (a
        // delivery waits a few milliseconds for others to share its commit).
        wake.yield()
        switch submission {
        case .completed:
            await finish(job, .succeeded)
        case .parked(let incident):
            state.handedToBus()
            // The bus holds it now, and is the one to ask where (it may park it again under
            // another incident): the store keeps it in flight until its outcome.
            logger.debug("\(job.fileName) parked under incident \(incident.map { "\($0)" } ?? "none (retry budget)")")
        case .stopped(let stopped):
            await finish(job, .stopped(stopped))
        }
    }

    // MARK: - Recording

    /// Records the final outcome of a job the bus held.
    private func finished(_ job: OutboxFile, _ outcome: JobOutcome) async {
        state.backFromBus()
        await finish(job, outcome)
        wake.yield()
    }

    /// Records what became of a job; an outcome the store cannot take now waits in `unrecorded`.
    private func finish(_ job: OutboxFile, _ outcome: JobOutcome) async {
        if await !record(job, outcome) { state.unrecorded.append((job, outcome)) }
    }

    /// Records an outcome; false when the store could not take it (and that is reported).
    private func record(_ job: OutboxFile, _ outcome: JobOutcome) async -> Bool {
        let recorded =
            switch outcome {
            case .succeeded: await delivered(job)
            case .stopped(let stopped): await ended(job, stopped)
            }
        if recorded { state.recorded() }
        return recorded
    }

    /// Records the outcomes the store could not take before, oldest first, and stops at the
    /// first it still cannot take: one failed write and one report per try, not one per job.
    private func recordUnrecorded() async {
        guard !state.unrecorded.isEmpty else { return }
        let waiting = state.unrecorded
        state.unrecorded = []
        for (index, (job, outcome)) in waiting.enumerated() where await !record(job, outcome) {
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
        } catch {
            // The API has it; the file stays until the store has it too (or, after a restart,
            // a second upload is absorbed by its idempotency key).
            await StoreFailure.report(error, doing: "record \(job.fileName) as delivered", bus: bus, logger: logger)
            return false
        }
        removal.remove(job.path, fileName: job.fileName)
        for path in duplicates.take(for: job.id) {
            removal.remove(path, fileName: String(path.split(separator: "/").last ?? ""))
        }
        return true
    }

    private func ended(_ job: OutboxFile, _ stopped: JobStopped) async -> Bool {
        do {
            switch stopped.reason {
            case .deadLettered:
                let reason = stopped.failure.map { "\($0.text.title): \($0.text.message)" } ?? "rejected"
                try store.markDeadLettered(job.id, reason: reason, incident: stopped.incident?.rawValue)
                // One line per job, so not above info: the incident's entries tell the story.
                logger.info("\(job.fileName) set aside as a dead letter: \(reason)")
            case .discarded, .cancelledByOperator:
                try store.markDiscarded(job.id, reason: "\(stopped.reason) by an operator")
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
            await StoreFailure.report(error, doing: "record what became of \(job.fileName)", bus: bus, logger: logger)
            return false
        }
        return true
    }
}

/// Removes (or moves, by `sync.after-delivery`) a delivered file, and forgets having seen it so
/// that a new file of that name is looked at afresh.
final class DeliveredFileRemoval: Sendable {
    private let setting: Mutex<AfterDelivery>
    private let seen: SeenFiles
    private let logger: Logger

    init(afterDelivery: AfterDelivery, seen: SeenFiles, logger: Logger) {
        self.setting = Mutex(afterDelivery)
        self.seen = seen
        self.logger = logger
    }

    var afterDelivery: AfterDelivery {
        get { setting.withLock { $0 } }
        set { setting.withLock { $0 = newValue } }
    }

    func remove(_ path: String, fileName: String) {
        seen.forget(fileName)
        do throws(SystemCallError) {
            switch afterDelivery {
            case .delete: try SystemCall.unlink(path)
            case .move(let directory): try SystemCall.rename(path, to: directory + "/" + fileName)
            }
        } catch where error.errnoCode != ENOENT {
            logger.error("cannot remove or move delivered \(path) (sync.after-delivery): \(error)")
        } catch {
            // Already gone: an operator or a copy's removal took it.
        }
    }
}
