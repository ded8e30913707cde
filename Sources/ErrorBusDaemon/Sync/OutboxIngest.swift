import ErrorBus
import ErrorBusStore
import ErrorBusSupport
import Foundation
import Logging

/// Takes files in: watches and rescans the outbox, waits for files written in place to settle
/// (and for their writers to close them), and turns each complete file into a durable job,
/// `queued` in the store, before anything else happens to it. Files it cannot read, and entries
/// it will not send (a directory, a link, a FIFO, a name that is not UTF-8), are remembered and
/// told once; a file is taken as soon as its permissions change.
///
/// Which files are already jobs is the store's to tell (``JobStore/knownFiles(service:named:)``,
/// a slice of names at a time): a rescan of a million queued files reads none of them again,
/// and remembers none of them. What it shares with the dispatcher (``SyncService``) is behind
/// locks, never an actor hop per file: the files taken care of that are no job of their own
/// (``SeenFiles``) and the copies of pending content to remove with their job
/// (``DuplicateFiles``).
actor OutboxIngest {
    /// What the ingest needs to know, from the sync settings.
    struct Settings: Sendable, Equatable {
        var outbox: String
        var maxFileSize: Int64
        var rescanInterval: Duration
        var settleTime: Duration
        /// The shape of every upload on the bus: the service, scope (the upload URL's origin)
        /// and realm they share.
        var uploads: Job
        var backlog = DaemonConfiguration.Sync.Backlog()
        /// Whether the API tells files by name (``UploadContract/tellsFilesByName``): then a job
        /// is keyed by content and name, not by content alone.
        var keyedByName = false
    }

    private var settings: Settings
    private let store: JobStore
    private let bus: ErrorBus
    private let clock: Timeline
    private let wallClock: WallClock
    private let logger: Logger
    private let seen: SeenFiles
    private let duplicates: DuplicateFiles
    private let replaced: ReplacedJobs
    private let deliveredFiles: @Sendable (_ path: String, _ fileName: String, _ read: FileStatus?) -> DeliveredFileRemoval.Outcome
    private let queued: @Sendable () -> Void
    /// Outbox files errorbusd cannot read, and entries it will not send, by name: reported in the
    /// status and metrics until they are readable (a change of their permissions is seen at once)
    /// or gone.
    private var unreadable: [String: UnreadableFile] = [:]
    /// Files written in place, or that a writer has open, to look at again once the settle time
    /// has passed.
    private var settling: Set<String> = []
    private let (settleWakeups, settleWake) = AsyncStream.makeStream(of: Void.self, bufferingPolicy: .bufferingNewest(1))
    private let leases: WriterLeases
    /// The overflow of the backlog under way, shared with the dispatcher.
    private let overflow: BacklogOverflow
    /// The files the store refused to queue.
    private let unqueued: UnqueuedFiles
    private let storeFailures: StoreFailures
    private let parkedUploads: ParkedUploads

    /// - Parameters:
    ///   - deliveredFiles: Removes (or moves) a file whose content the API already has.
    ///   - queued: Called when new jobs were queued, or a rescan may have work for the dispatcher.
    init(
        settings: Settings,
        store: JobStore,
        bus: ErrorBus,
        clock: Timeline,
        wallClock: WallClock = .system,
        seen: SeenFiles,
        duplicates: DuplicateFiles,
        replaced: ReplacedJobs,
        overflow: BacklogOverflow,
        unqueued: UnqueuedFiles,
        storeFailures: StoreFailures,
        parkedUploads: ParkedUploads,
        leases: WriterLeases,
        logger: Logger,
        deliveredFiles: @escaping @Sendable (_ path: String, _ fileName: String, _ read: FileStatus?) -> DeliveredFileRemoval.Outcome,
        queued: @escaping @Sendable () -> Void
    ) {
        self.settings = settings
        self.store = store
        self.bus = bus
        self.clock = clock
        self.wallClock = wallClock
        self.seen = seen
        self.duplicates = duplicates
        self.replaced = replaced
        self.overflow = overflow
        self.unqueued = unqueued
        self.storeFailures = storeFailures
        self.parkedUploads = parkedUploads
        self.leases = leases
        self.logger = logger
        self.deliveredFiles = deliveredFiles
        self.queued = queued
    }

    /// Watches and rescans the outbox until graceful shutdown.
    func run() async throws {
        try await withThrowingDiscardingTaskGroup { group in
            group.addTask { try await untilGracefulShutdown { try await self.watch() } }
            group.addTask { try await untilGracefulShutdown { try await self.rescanPeriodically() } }
            group.addTask { try await untilGracefulShutdown { try await self.lookAgainOnceSettled() } }
        }
    }

    /// Applies new settings; the outbox stays the one watched since the start.
    func update(_ settings: Settings) {
        var settings = settings
        settings.outbox = self.settings.outbox
        self.settings = settings
    }

    /// Has the file `name` looked at again once the settle time has passed: it was delivered, but
    /// changed after it was read, or a writer has it open.
    func retake(_ name: String) {
        settle([name])
    }

    /// The outbox files errorbusd cannot read (and the entries it will not send), oldest first.
    var unreadableFiles: [UnreadableFile] {
        unreadable.values.sorted { ($0.since, $0.name) < ($1.since, $1.name) }
    }

    // MARK: - Finding files

    private func watch() async throws {
        let watcher = OutboxWatcher(directory: settings.outbox, logger: logger)
        try await watcher.run { signal in
            switch signal {
            case .arrived(let renamed, let written, let changed):
                // Renamed in: complete, taken at once (unless a writer still has it open).
                if !renamed.isEmpty { self.settle(await self.ingest(renamed, announced: true)) }
                // Closed after writing in place: its writer may write again (`>>` closes after
                // each line); taken once it has not changed for the settle time.
                if !written.isEmpty { self.settle(await self.ingest(written, announced: false)) }
                // Permissions or owner changed: a file that could not be read may be readable
                // now. Not announced: a writer may still be writing it.
                if !changed.isEmpty { await self.ingestChanged(changed) }
            case .overflow: await self.settle(self.rescan())
            }
        }
    }

    private func rescanPeriodically() async throws {
        while !Task.isCancelled {
            let began = clock.now()
            // Files too recently changed to take (left by the previous run, or written in place)
            // are looked at again, alone, once they may have settled: not a whole interval later.
            settle(await rescan())
            let ended = clock.now()
            // The safety net takes at most a share of the time: a rescan of a million files
            // (seconds of listing, looking up and stat-ing) comes further apart than the interval.
            let took = began.duration(to: ended)
            let next = ended.advanced(by: Self.rescanSpacing(took: took, interval: settings.rescanInterval))
            // Files the full backlog left in the outbox are looked at again soon: room may come
            // with any delivery.
            let soon = ended.advanced(by: Self.rescanSpacing(took: took, interval: Self.rejectedRescanInterval))
            try await clock.sleep(overflow.waitingForRoom == 0 ? next : min(next, soon))
        }
    }

    /// Notes files to look at again once the settle time has passed.
    private func settle(_ names: [String]) {
        guard !names.isEmpty else { return }
        settling.formUnion(names)
        settleWake.yield()
    }

    /// Looks at the files left unsettled again, alone, each settle time (at least
    /// ``minimumSettleLook``: a writer that keeps a file open is asked about no more often), until
    /// they are taken or gone.
    private func lookAgainOnceSettled() async throws {
        for await _ in settleWakeups {
            while !settling.isEmpty {
                try await clock.sleep(for: max(settings.settleTime, Self.minimumSettleLook))
                let names = settling.sorted()
                settling = []
                settle(await ingest(names, announced: false))
            }
        }
    }

    /// How often, at most, a file a writer keeps open is looked at again.
    static let minimumSettleLook = Duration.milliseconds(100)

    /// How soon the outbox is listed again while files wait for room in the backlog.
    static let rejectedRescanInterval = Duration.seconds(2)

    /// How long after a periodic rescan that took `took` the next one starts: `interval`, or 19
    /// times as long as it took if that is longer. The safety net takes at most a twentieth of
    /// the time, however large the outbox.
    static func rescanSpacing(took: Duration, interval: Duration) -> Duration {
        max(interval, took * 19)
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

    /// Looks at every entry of the outbox: the safety net for events inotify did not deliver.
    /// Returns the files left for having changed within the settle time.
    @discardableResult
    func rescan() async -> [String] {
        // Outcomes the store could not record before are retried by the dispatcher it wakes.
        queued()
        let inspector = self.inspector
        // Read and taken in a slice at a time: memory follows the slice, not the outbox.
        let listing: OutboxListing
        do {
            listing = try inspector.listing()
        } catch {
            logger.error("cannot list the outbox \(settings.outbox): \(error)")
            return []
        }
        // The few files remembered for what they were, until the walk finds them: those it does
        // not are gone.
        var missing = Set(unreadable.keys).union(overflow.leftOutNames).union(unqueued.names)
        var unsettled: [String] = []
        do {
            while case let names = try listing.next(Self.ingestSlice), !names.isEmpty {
                if !missing.isEmpty { missing.subtract(names) }
                unsettled += await ingest(names, announced: false)
            }
        } catch {
            logger.error("cannot list the outbox \(settings.outbox): \(error)")
            return unsettled
        }
        // Names that are not text: told once each, kept while they are there.
        for name in listing.undecodable {
            missing.remove(name)
            rememberUnsendable(name, because: "its name is not valid UTF-8, so errorbusd can neither read it by that name nor name it to the API; rename it")
        }
        // Unreadable files that were removed are no longer a problem.
        for name in missing where unreadable[name] != nil { forgetUnreadable(name, because: "is gone") }
        overflow.forgetLeftOut(missing)
        unqueued.forget(missing)
        return unsettled
    }

    private var inspector: OutboxInspector {
        OutboxInspector(directory: settings.outbox, maxFileSize: settings.maxFileSize, settleTime: settings.settleTime, leases: leases)
    }

    /// Turns outbox entries into durable jobs, a slice at a time: each slice is inspected (and
    /// hashed) in one job on the I/O thread pool, then queued in one transaction. Returns the
    /// entries left for having changed within the settle time.
    @discardableResult
    func ingest(_ names: [String], announced: Bool) async -> [String] {
        let inspector = self.inspector
        var unsettled: [String] = []
        for start in stride(from: 0, to: names.count, by: Self.ingestSlice) {
            let slice = names[start..<min(start + Self.ingestSlice, names.count)]
            // The files that are jobs already (the store's), and those taken care of otherwise.
            let stored = await knownFiles(slice)
            var known = seen.stamps(of: slice)
            for (name, file) in stored { known[name] = FileStamp(file) ?? known[name] }
            if settings.backlog.rejectsNew, let room = await room(), room.isFull {
                // No room even for the smallest file: the new ones are not even read. One found
                // to be no file to upload (a directory, an unreadable file) is not left out again.
                reject(slice.filter { known[$0] == nil && !$0.hasPrefix(".") && stored[$0] == nil && unreadable[$0] == nil })
                continue
            }
            let inspections: [OutboxInspector.Inspection]
            do {
                inspections = try await inspector.inspect(Array(slice), known: known, announced: announced)
            } catch is CancellationError {
                // A stop during the ingest (SIGTERM): nothing went wrong.
                return unsettled
            } catch {
                // Only when the thread pool has stopped: the daemon is shutting down.
                logger.error("cannot inspect the outbox: \(error)")
                return unsettled
            }
            unsettled += inspections.filter { $0.verdict.isUnsettled }.map(\.name)
            // A file taken before and changed since holds other content now: its older jobs'
            // content is gone.
            let rewritten = Set(inspections.lazy.filter { known[$0.name] != nil || stored[$0.name] != nil }.map(\.name))
            await enqueue(inspections, directory: inspector.directory, announced: announced, rewritten: rewritten, stored: stored)
        }
        return unsettled
    }

    /// How many outbox entries are inspected in one thread-pool job and queued in one transaction.
    static let ingestSlice = 512

    /// - Parameter stored: The files among these that the store knows as jobs: they take no room,
    ///   being no new jobs (the store finds them duplicates).
    private func enqueue(_ inspections: [OutboxInspector.Inspection], directory: String, announced: Bool, rewritten: Set<String>, stored: [String: KnownFile]) async {
        var ready: [OutboxFile] = []
        // What each file was when its bytes were hashed: a copy of delivered content is removed
        // only while it still is.
        var read: [String: FileStatus] = [:]
        for inspection in inspections {
            let name = inspection.name
            switch inspection.verdict {
            case .ready, .unsettled, .beingWritten, .unchanged: break
            // Left out unseen while the backlog was full, or refused by the store, it is no file
            // to take after all.
            default:
                overflow.taken(name)
                unqueued.queued(name)
            }
            switch inspection.verdict {
            case .ready(let size, let key):
                let (id, digest) = settings.keyedByName ? (ContentKey.of(key, name: name), key) : (key, nil)
                var file = OutboxFile(id: id, digest: digest, service: SyncService.service, fileName: name, path: directory + "/" + name, size: size)
                file.modifiedNanoseconds = inspection.stamp?.modifiedSinceEpoch
                // A file the store refused before arrived when it was first refused.
                file.arrivedAt = unqueued.firstRefused(name)
                ready.append(file)
                read[name] = inspection.read
                forgetUnreadable(name, because: "can be read now and is queued")
            case .tooLarge(let size):
                seen.record(name, inspection.stamp)
                forgetUnreadable(name, because: "can be read now")
                await reportTooLarge(name, size: size)
            case .unreadable(let error):
                rememberUnreadable(name, error, announced: announced)
            case .notRegularFile(let what):
                rememberUnsendable(name, because: "it is \(what), and errorbusd uploads only regular files; move it out of the outbox")
            case .hidden, .vanished:
                forgetUnreadable(name, because: "is no longer a file to upload")
            case .unchanged, .unsettled, .beingWritten:
                continue
            }
        }
        if settings.backlog.rejectsNew, !ready.isEmpty, var room = await room() {
            var taken: [OutboxFile] = []
            for file in ready {
                if room.take(file.size) || stored[file.fileName] != nil {
                    var file = file
                    // A file that waited for room arrived when it was first left out.
                    file.arrivedAt = overflow.taken(file.fileName) ?? file.arrivedAt
                    taken.append(file)
                } else {
                    reject([file.fileName])
                }
            }
            ready = taken
        }
        guard !ready.isEmpty else {
            await endOverflowIfRoom()
            return
        }
        do {
            // An API that tells files by name may have let its consumers remove a file: the same
            // file dropped again after its delivery goes again.
            // While an incident holds the uploads back, new jobs are parked under it as they are
            // written, rather than queued and then parked.
            let holder = await parkedUploads.holder(of: settings.uploads)
            let result = try await store.enqueue(ready, redeliver: settings.keyedByName, parkedUnder: holder?.rawValue)
            for file in ready { unqueued.queued(file.fileName) }
            for duplicate in result.duplicates {
                if duplicate.existing.state == .delivered {
                    // The API already has this content: the file is a copy of a delivered one,
                    // or the delivered file itself, left by a stop between recording the
                    // delivery and removing the file (kill -9, a crash).
                    let name = duplicate.new.fileName
                    logger.info("\(name) has content already delivered (job \(duplicate.existing.id.prefix(12))): it is removed without an upload")
                    if deliveredFiles(duplicate.new.path, name, read[name]) == .leftChanged { settle([name]) }
                } else if duplicate.new.path != duplicate.existing.path && !duplicate.existing.state.isFinal {
                    // Delivered together with the job that has this content; no job of its own,
                    // so remembered here, not read again by every rescan.
                    duplicates.add(duplicate.new.path, to: duplicate.existing.id)
                    seen.record(duplicate.new.fileName, duplicate.new.modifiedNanoseconds.flatMap {
                        FileStamp(KnownFile(size: duplicate.new.size, modifiedNanoseconds: $0))
                    })
                }
            }
            for delivered in result.replacedDelivered {
                logger.notice("\(delivered.fileName) was dropped again after its delivery with the same content: as the API tells files by name, and may no longer have it, it is uploaded again")
            }
            for discarded in result.replacedDiscarded {
                let file = result.inserted.first { $0.id == discarded.id }?.fileName ?? discarded.fileName
                logger.notice("\(file) has the content of a job discarded before (\(discarded.fileName), \(discarded.reason ?? "discarded")): it arrived again and is queued as a new job")
            }
            for job in result.inserted where rewritten.contains(job.fileName) {
                await supersede(by: job)
            }
            if let holder {
                await parkedUploads.parked(result.inserted.count, "new", like: settings.uploads, under: holder)
            } else if !result.inserted.isEmpty {
                logger.debug("queued \(result.inserted.count) outbox files")
                queued()
            }
            await endOverflowIfRoom()
        } catch {
            // They wait in the outbox, unknown to the store: counted until they are queued.
            unqueued.refused(ready.map { ($0.fileName, $0.size) }, reason: "\(error)", at: wallClock.now())
            logger.debug("\(IncidentReporter.count(unqueued.summary.files, "outbox file")) could not be queued, and wait in the outbox")
            await storeFailures.report(error, doing: "queue \(ready.count) outbox files")
        }
    }

    /// Gives up the older jobs of a file written again with other content, which `job` now is:
    /// those waiting at once, those under way or held by the bus when their turn comes. Told once
    /// per job given up.
    private func supersede(by job: OutboxJob) async {
        let file = OutboxFile(job)
        let now = "its content (now job \(job.id.prefix(12)))"
        do {
            let reason = OutboxFileFailure.replaced(file, now).text
            let (discarded, inFlight) = try store.supersede(path: job.path, service: job.service, by: job.id, reason: "\(reason.title): \(reason.message)")
            for old in discarded {
                let text = OutboxFileFailure.replaced(OutboxFile(old), now).text
                logger.notice("\(text.title): \(text.message) \(text.next ?? "")")
            }
            for old in inFlight {
                replaced.add(old.id, OutboxFileFailure.replaced(OutboxFile(old), now))
            }
        } catch {
            await storeFailures.report(error, doing: "give up the jobs \(job.fileName) replaced")
        }
    }

    // MARK: - The backlog's limits

    /// What the store knows of the files `names` as jobs that may still be in the outbox; none
    /// when the store cannot tell (reported): then they are read again, and the store finds the
    /// jobs it has.
    private func knownFiles(_ names: ArraySlice<String>) async -> [String: KnownFile] {
        do {
            return try store.knownFiles(service: SyncService.service, named: names)
        } catch {
            await storeFailures.report(error, doing: "look up outbox files")
            return [:]
        }
    }

    /// The room left in the backlog; `nil` when the store cannot tell (reported).
    private func room() async -> BacklogRoom? {
        do {
            return BacklogRoom(try store.backlog(service: SyncService.service), settings.backlog)
        } catch {
            await storeFailures.report(error, doing: "read the backlog")
            return nil
        }
    }

    /// Leaves files in the outbox for want of room (`reject-new`): each counted once.
    private func reject(_ names: [String]) {
        // Counted as waiting for room now, not as refused by the store.
        for name in names { unqueued.queued(name) }
        let new = overflow.leaveOut(names)
        guard !new.isEmpty else { return }
        logger.debug("\(new.count) new outbox file(s) left in the outbox for want of room in the backlog (\(overflow.waitingForRoom) wait)")
        overflow.record(new.count, settings.backlog)
    }

    /// Ends the overflow once the backlog has room again and every file left out was taken.
    private func endOverflowIfRoom() async {
        guard overflow.isOngoing, let backlog = try? store.backlog(service: SyncService.service) else { return }
        overflow.endIfUnder(backlog, settings.backlog)
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
            since: unreadable[name]?.since ?? wallClock.now(),
            announced: announced || unreadable[name]?.announced == true
        )
    }

    /// Notes an entry errorbusd will not send; tells the journal once per entry, not at every look.
    private func rememberUnsendable(_ name: String, because reason: String) {
        guard unreadable[name]?.reason != reason else { return }
        logger.warning("\(name) in the outbox is not uploaded: \(reason). It is listed by errorbusctl status until it is gone")
        unreadable[name] = UnreadableFile(name: name, reason: reason, since: unreadable[name]?.since ?? wallClock.now(), announced: false)
    }

    private func forgetUnreadable(_ name: String, because what: String) {
        guard unreadable.removeValue(forKey: name) != nil else { return }
        logger.notice("\(name) in the outbox \(what)")
    }

    private func reportTooLarge(_ name: String, size: Int64) async {
        logger.warning("\(name) in the outbox is \(size) bytes, over sync.max-file-size (\(settings.maxFileSize)); it is left in place and not uploaded")
        let failure = Failure(
            category: .invalid(reason: "over the size limit"),
            scope: settings.uploads.scope,
            cause: "fileTooLarge",
            service: SyncService.service,
            text: OperatorText(
                title: "Outbox file too large",
                message: "\(name) is \(size) bytes, more than sync.max-file-size allows (\(settings.maxFileSize)).",
                next: "It stays in the outbox and is not uploaded; split it or raise the limit and reload."
            )
        )
        await bus.report(failure)
    }
}
