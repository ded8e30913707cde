import AsyncHTTPClient
import DequeModule
import ErrorBusStore
import ErrorBusSupport
#if canImport(Glibc)
import Glibc
#endif
import ErrorBus
import Foundation
import Logging
import Metrics
import ServiceLifecycle

/// Uploads every file that arrives in the outbox, at least once, never losing one.
///
/// Files become durable jobs before anything else happens to them; each job is handed to the bus
/// with `submit`, so a job that fails is parked by the bus (without a waiting task) and released
/// when its incident's cause is gone. The service itself has no retry, back-off or login logic:
/// it only bounds how many uploads run at once, and records what became of each job.
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
    }

    static let service = "sync"

    private var settings: Settings
    private let store: JobStore
    private let bus: ErrorBus
    private let auth: AuthService
    private let http: HTTPClient
    private let logger: Logger
    /// Files delivered (swift-metrics).
    private let deliveries = Counter(label: "errorbus_sync_delivered_total")
    /// Uploads with the current settings; shared by every job.
    private var uploader: Uploader

    /// How many jobs handed to the bus the store has no outcome for yet: uploading, parked in the
    /// bus, or waiting in `unrecorded`. For the stop's log line; the store's claim is what keeps a
    /// job from being started twice (a claimed job is no longer queued).
    private var held = 0
    /// The jobs the bus still held (parked, or waiting for the retry budget) when this service
    /// stopped: the daemon tells them apart from uploads its drain timeout cut off.
    private(set) var heldByBusAtStop = 0
    /// Uploads running in this service's own tasks (first runs; the bus runs released ones).
    private var running = 0
    /// Jobs claimed from the store, next to submit.
    private var pending = Deque<OutboxJob>()
    /// A claim of queued jobs is under way.
    private var claiming = false
    /// The dispatcher was woken during the claim under way: claim again once it ends.
    private var claimAgain = false
    /// Outbox entries already taken care of, by name, with the size and time they had then, so
    /// that rescans do not hash them again.
    private var seen: [String: FileStamp] = [:]
    /// Outbox files errorbusd cannot read, by name: reported in the status and metrics until they
    /// are readable (a change of their permissions is seen at once) or gone.
    private var unreadable: [String: UnreadableFile] = [:]
    /// Names of files with the same content as a job, to remove with it.
    private var duplicates: [String: [String]] = [:]
    /// What became of jobs whose outcome the store could not record (disk full, read-only):
    /// recorded again, oldest first, at the next wake-up or rescan. Until then the job stays in
    /// flight in the store, where nothing would pick it up again before a restart, and its file
    /// stays in the outbox.
    private var unrecorded: [(job: Upload, outcome: JobOutcome)] = []
    /// While parking is full, new jobs wait until this instant.
    private var parkingFullUntil: ContinuousClock.Instant?
    private let clock = ContinuousClock()
    private let (wakeups, wake) = AsyncStream.makeStream(of: Void.self, bufferingPolicy: .bufferingNewest(1))

    init(settings: Settings, store: JobStore, bus: ErrorBus, auth: AuthService, http: HTTPClient, logger: Logger) {
        self.settings = settings
        self.store = store
        self.bus = bus
        self.auth = auth
        self.http = http
        self.logger = logger
        self.uploader = Uploader(http: http, auth: auth, settings: settings)
    }

    /// Watches and rescans the outbox and uploads what it finds, until graceful shutdown; then
    /// takes no new job, lets the uploads under way finish (the service group's shutdown
    /// deadline cancels any that take longer) and makes sure every state change is on disk.
    func run() async throws {
        // Jobs queued before a restart go first.
        wake.yield()
        try await withThrowingDiscardingTaskGroup { group in
            group.addTask { try await untilGracefulShutdown { try await self.watch() } }
            group.addTask { try await untilGracefulShutdown { try await self.rescanPeriodically() } }
            group.addTask { await self.dispatch() }
        }
        heldByBusAtStop = await bus.heldJobs(service: Self.service).count
        try await store.flush()
        logger.info("sync stopped", metadata: ["held": "\(held)"])
    }

    /// Applies new settings (a reload). Jobs already queued keep their state.
    func update(_ settings: Settings) {
        if settings.outbox != self.settings.outbox {
            logger.warning("sync.outbox changed: restart errorbusd to watch \(settings.outbox)")
        }
        var settings = settings
        settings.outbox = self.settings.outbox
        self.settings = settings
        uploader = Uploader(http: http, auth: auth, settings: settings)
        wake.yield()
    }

    /// Looks at the queue again now: an operator queued dead letters again.
    func wakeUp() {
        wake.yield()
    }

    // MARK: - Finding files

    private func watch() async throws {
        let watcher = OutboxWatcher(directory: settings.outbox, logger: logger)
        try await watcher.run { signal in
            switch signal {
            case .arrived(let names, let changed):
                if !names.isEmpty { await self.ingest(names, announced: true) }
                // Permissions or owner changed: a file that could not be read may be readable
                // now. Not announced: a writer may still be writing it.
                if !changed.isEmpty { await self.ingestChanged(changed) }
            case .overflow: await self.rescan()
            }
        }
    }

    private func rescanPeriodically() async throws {
        while !Task.isCancelled {
            var unsettled = await rescan()
            let next = clock.now.advanced(by: settings.rescanInterval)
            // Files too recently changed to take (left by the previous run, or written in place)
            // are looked at again, alone, once they may have settled: not a whole interval later.
            while !unsettled.isEmpty, clock.now.advanced(by: settings.settleTime) < next {
                try await clock.sleep(for: settings.settleTime)
                unsettled = await ingest(unsettled, announced: false)
            }
            try await clock.sleep(until: next)
        }
    }

    /// Files whose permissions or owner changed: those errorbusd could not read are looked at
    /// again now, as they were first seen (a file announced complete is taken at once).
    private func ingestChanged(_ names: [String]) async {
        let retried = names.compactMap { unreadable[$0] }
        for announced in [true, false] {
            let batch = retried.filter { $0.announced == announced }.map(\.name)
            if !batch.isEmpty { await ingest(batch, announced: announced) }
        }
    }

    /// The outbox files errorbusd cannot read, oldest first.
    var unreadableFiles: [UnreadableFile] {
        unreadable.values.sorted { ($0.since, $0.name) < ($1.since, $1.name) }
    }

    /// Looks at every entry of the outbox: the safety net for events inotify did not deliver.
    /// Returns the files left for having changed within the settle time.
    @discardableResult
    private func rescan() async -> [String] {
        await recordUnrecorded()
        let inspector = self.inspector
        do {
            let listing = try inspector.listing()
            // Unreadable files that were removed are no longer a problem.
            let present = Set(listing)
            for name in unreadable.keys where !present.contains(name) { forgetUnreadable(name, because: "is gone") }
            return await ingest(listing, announced: false)
        } catch {
            logger.error("cannot list the outbox \(settings.outbox): \(error)")
            return []
        }
    }

    private var inspector: OutboxInspector {
        OutboxInspector(directory: settings.outbox, maxFileSize: settings.maxFileSize, settleTime: settings.settleTime)
    }

    /// Turns outbox entries into durable jobs, a slice at a time: each slice is inspected (and
    /// hashed) in one job on the I/O thread pool, then queued in one transaction. Returns the
    /// entries left for having changed within the settle time.
    @discardableResult
    private func ingest(_ names: [String], announced: Bool) async -> [String] {
        let inspector = self.inspector
        var unsettled: [String] = []
        for start in stride(from: 0, to: names.count, by: Self.ingestSlice) {
            let slice = names[start..<min(start + Self.ingestSlice, names.count)]
            let known = slice.reduce(into: [String: FileStamp]()) { known, name in known[name] = seen[name] }
            let inspections: [OutboxInspector.Inspection]
            do {
                inspections = try await inspector.inspect(Array(slice), known: known, announced: announced)
            } catch {
                // Only when the thread pool has stopped: the daemon is shutting down.
                logger.error("cannot inspect the outbox: \(error)")
                return unsettled
            }
            unsettled += inspections.filter { $0.verdict == .unsettled }.map(\.name)
            await enqueue(inspections, directory: inspector.directory, announced: announced)
        }
        return unsettled
    }

    /// How many outbox entries are inspected in one thread-pool job and queued in one transaction.
    static let ingestSlice = 512

    private func enqueue(_ inspections: [OutboxInspector.Inspection], directory: String, announced: Bool) async {
        var ready: [NewJob] = []
        for inspection in inspections {
            let name = inspection.name
            switch inspection.verdict {
            case .ready(let size, let key):
                ready.append(NewJob(id: key, service: Self.service, fileName: name, path: directory + "/" + name, size: size))
                seen[name] = inspection.stamp
                forgetUnreadable(name, because: "can be read now and is queued")
            case .tooLarge(let size):
                seen[name] = inspection.stamp
                forgetUnreadable(name, because: "can be read now")
                await reportTooLarge(name, size: size)
            case .unreadable(let error):
                rememberUnreadable(name, error, announced: announced)
            case .hidden, .notRegularFile, .vanished:
                forgetUnreadable(name, because: "is no longer a file to upload")
            case .unchanged, .unsettled:
                continue
            }
        }
        guard !ready.isEmpty else { return }
        do {
            let result = try await store.enqueue(ready)
            for duplicate in result.duplicates {
                if duplicate.existing.state == .delivered {
                    // The API already has this content: the file is a copy of a delivered one,
                    // or the delivered file itself, left by a stop between recording the
                    // delivery and removing the file (kill -9, a crash).
                    remove(duplicate.new.path, fileName: duplicate.new.fileName)
                } else if duplicate.new.path != duplicate.existing.path && !duplicate.existing.state.isFinal {
                    // Delivered together with the job that has this content.
                    duplicates[duplicate.existing.id, default: []].append(duplicate.new.path)
                }
            }
            if !result.inserted.isEmpty {
                logger.debug("queued \(result.inserted.count) outbox files")
                wake.yield()
            }
        } catch {
            for job in ready { seen[job.fileName] = nil }
            await reportStoreFailure(error, doing: "queue \(ready.count) outbox files")
        }
    }

    /// Notes a file errorbusd cannot read; tells the journal once per file, not at every look.
    private func rememberUnreadable(_ name: String, _ error: SystemCallError, announced: Bool) {
        let reason = "\(error)"
        if let known = unreadable[name], known.reason == reason {
            if announced && !known.announced { unreadable[name]?.announced = true }
            return
        }
        logger.error("cannot read \(name) in the outbox: \(reason). It is not uploaded until errorbusd can read it (mode 0640 or more, group errorbus, or owned by errorbusd); a change of its permissions is seen at once")
        unreadable[name] = UnreadableFile(
            name: name,
            reason: reason,
            since: unreadable[name]?.since ?? Date(),
            announced: announced || unreadable[name]?.announced == true
        )
    }

    private func forgetUnreadable(_ name: String, because what: String) {
        guard unreadable.removeValue(forKey: name) != nil else { return }
        logger.notice("\(name) in the outbox \(what)")
    }

    private func reportTooLarge(_ name: String, size: Int64) async {
        logger.warning("\(name) in the outbox is \(size) bytes, over sync.max-file-size (\(settings.maxFileSize)); it is left in place and not uploaded")
        let failure = Failure(
            category: .invalid(reason: "over the size limit"),
            scope: settings.host,
            cause: "fileTooLarge",
            service: Self.service,
            text: OperatorText(
                title: "Outbox file too large",
                message: "\(name) is \(size) bytes, more than sync.max-file-size allows (\(settings.maxFileSize)).",
                next: "It stays in the outbox and is not uploaded; split it or raise the limit and reload."
            )
        )
        await bus.report(failure)
    }

    // MARK: - Uploading

    private func dispatch() async {
        await withDiscardingTaskGroup { uploads in
            for await _ in wakeups.cancelOnGracefulShutdown() {
                await recordUnrecorded()
                while let job = nextJob() {
                    running += 1
                    held += 1
                    let (upload, uploader) = (Upload(job), uploader)
                    let busJob = Job(id: job.id, service: Self.service, scope: settings.host, realm: settings.realm)
                    uploads.addTask { await self.submit(upload, as: busJob, with: uploader) }
                }
                if startsClaim() {
                    uploads.addTask { await self.claim() }
                }
            }
        }
    }

    /// The next claimed job to start, if a slot is free and nothing holds new work back.
    private func nextJob() -> OutboxJob? {
        guard running < settings.concurrency else { return nil }
        if let until = parkingFullUntil {
            guard clock.now >= until else { return nil }
            parkingFullUntil = nil
        }
        return pending.popFirst()
    }

    /// Whether to claim more queued jobs now: before the claimed ones run out, so that the next
    /// ones are at hand when a slot frees and no slot waits for the store's writer (busy with
    /// deliveries and new jobs). One claim at a time; a wake-up during a claim (new jobs may
    /// have been queued after it read the queue) asks for another once it ends.
    private func startsClaim() -> Bool {
        guard pending.count < 2 * settings.concurrency, parkingFullUntil == nil else { return false }
        guard !claiming else {
            claimAgain = true
            return false
        }
        claiming = true
        claimAgain = false
        return true
    }

    /// Claims queued jobs for ``nextJob()``, and wakes the dispatcher when there is something
    /// to start or to claim again.
    private func claim() async {
        defer { claiming = false }
        logger.debug("claiming queued jobs", metadata: ["uploading": "\(running)", "claimed": "\(pending.count)"])
        do {
            let claimed = try await store.claimQueued(limit: 4 * settings.concurrency)
            pending.append(contentsOf: claimed)
            if !claimed.isEmpty || claimAgain { wake.yield() }
        } catch {
            await reportStoreFailure(error, doing: "claim queued outbox files")
        }
    }

    /// Hands a job to the bus. What the two closures capture stays in memory for as long as the
    /// bus holds the job parked: an `Upload` and two references, not the whole stored job.
    private nonisolated func submit(_ job: Upload, as busJob: Job, with uploader: Uploader) async {
        let submission = await bus.submit(busJob) {
            try await uploader.upload(job)
        } completion: { outcome in
            await self.finished(job, outcome)
        }
        await submitted(job, submission)
    }

    /// Records what the first run of a job came to.
    private func submitted(_ job: Upload, _ submission: Submission) async {
        running -= 1
        // The slot is free: the next upload starts while this one's outcome is recorded (a
        // delivery waits a few milliseconds for others to share its commit).
        wake.yield()
        switch submission {
        case .completed:
            await finish(job, .succeeded)
        case .parked(let incident):
            // The bus holds it now, and is the one to ask where (it may park it again under
            // another incident): the store keeps it in flight until its outcome.
            logger.debug("\(job.fileName) parked under incident \(incident.map { "\($0)" } ?? "none (retry budget)")")
        case .stopped(let stopped):
            await finish(job, .stopped(stopped))
        }
    }

    /// Records the final outcome of a job the bus held.
    private func finished(_ job: Upload, _ outcome: JobOutcome) async {
        await finish(job, outcome)
        wake.yield()
    }

    /// Records what became of a job; an outcome the store cannot take now waits in `unrecorded`.
    private func finish(_ job: Upload, _ outcome: JobOutcome) async {
        if await !record(job, outcome) { unrecorded.append((job, outcome)) }
    }

    /// Records an outcome; false when the store could not take it (and that is reported).
    private func record(_ job: Upload, _ outcome: JobOutcome) async -> Bool {
        let recorded =
            switch outcome {
            case .succeeded: await delivered(job)
            case .stopped(let stopped): await ended(job, stopped)
            }
        if recorded { held -= 1 }
        return recorded
    }

    /// Records the outcomes the store could not take before, oldest first, and stops at the
    /// first it still cannot take: one failed write and one report per try, not one per job.
    private func recordUnrecorded() async {
        guard !unrecorded.isEmpty else { return }
        let waiting = unrecorded
        unrecorded = []
        for (index, (job, outcome)) in waiting.enumerated() where await !record(job, outcome) {
            unrecorded = Array(waiting[index...]) + unrecorded
            return
        }
        // Jobs queued again may go.
        wake.yield()
    }

    private func delivered(_ job: Upload) async -> Bool {
        do {
            _ = try await store.markDelivered(job.id)
            deliveries.increment()
        } catch {
            // The API has it; the file stays until the store has it too (or, after a restart,
            // a second upload is absorbed by its idempotency key).
            await reportStoreFailure(error, doing: "record \(job.fileName) as delivered")
            return false
        }
        remove(job.path, fileName: job.fileName)
        for path in duplicates.removeValue(forKey: job.id) ?? [] {
            remove(path, fileName: String(path.split(separator: "/").last ?? ""))
        }
        return true
    }

    private func ended(_ job: Upload, _ stopped: JobStopped) async -> Bool {
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
                parkingFullUntil = clock.now.advanced(by: .seconds(1))
            case .shutdown, .taskCancelled:
                // Stays in flight in the store: the next start queues it again.
                break
            default:
                try store.markQueued(job.id, lastError: stopped.description)
            }
        } catch {
            await reportStoreFailure(error, doing: "record what became of \(job.fileName)")
            return false
        }
        return true
    }

    /// Removes (or moves, by configuration) a delivered file.
    private func remove(_ path: String, fileName: String) {
        seen[fileName] = nil
        do throws(SystemCallError) {
            switch settings.afterDelivery {
            case .delete: try SystemCall.unlink(path)
            case .move(let directory): try SystemCall.rename(path, to: directory + "/" + fileName)
            }
        } catch where error.errnoCode != ENOENT {
            logger.error("cannot remove or move delivered \(path) (sync.after-delivery): \(error)")
        } catch {
            // Already gone: an operator or a copy's removal took it.
        }
    }

    /// A store that cannot write (disk full, read-only) pauses the service: a `fatal` incident
    /// whose probe checks the condition. Nothing is lost: files stay in the outbox.
    private func reportStoreFailure(_ error: any Error, doing what: String) async {
        logger.error("cannot \(what): \(error)")
        guard let storeError = error as? StoreError, storeError.isDiskFull || storeError.isReadOnly else { return }
        let failure = Failure(
            category: .fatal,
            scope: Self.service,
            cause: storeError.isDiskFull ? "diskFull" : "stateReadOnly",
            service: Self.service,
            text: OperatorText(
                title: storeError.isDiskFull ? "State disk full" : "State read-only",
                message: "errorbusd could not \(what): \(storeError)",
                next: "Uploads pause until the state directory can be written again; outbox files stay in place."
            )
        )
        await bus.report(failure)
    }
}
