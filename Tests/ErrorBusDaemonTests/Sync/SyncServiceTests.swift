import ErrorBus
import ErrorBusStore
import ErrorBusSupport
import ErrorBusTesting
import Foundation
import Glibc
import Logging
import Synchronization
import TestSupport
import Testing

@testable import ErrorBusDaemon

/// The sync service in-process: a real store, a real bus, a real outbox directory, a fake
/// uploader, and manual clocks, so that intervals and pauses pass when the test says.
@Suite(.serialized, .timeLimit(.minutes(1)))
struct SyncServiceTests {
    @Test func uploadsRunAtMostConcurrencyAtOnceAndEveryFileIsDeliveredAndRemoved() async throws {
        let uploader = FakeUploader(gated: true)
        try await SyncHarness.with(concurrency: 2, uploader: uploader) { harness in
            for number in 0..<6 { try harness.drop("item-\(number).bin") }
            // Two start together; then each release lets one upload finish and one more start:
            // a third never runs beside the first two.
            await uploader.nextStart()
            await uploader.nextStart()
            for _ in 0..<4 {
                uploader.release()
                await uploader.nextStart()
            }
            uploader.release()
            uploader.release()
            _ = try await DirectoryWatcher.wait(for: harness.outbox) { $0.isEmpty }
            #expect(uploader.peak == 2)
            #expect(uploader.uploads.count == 6)
            #expect(try harness.store.counts().delivered == 6)
        }
    }

    @Test func aFileInotifyDidNotReportIsFoundByTheNextRescan() async throws {
        let uploader = FakeUploader()
        try await SyncHarness.with(uploader: uploader) { harness in
            // The first rescan is over once its loop sleeps for the interval.
            await harness.clock.sleepers(atLeast: 1)
            // A hard link makes an entry without any event the watcher asks for.
            let elsewhere = harness.root + "/elsewhere.bin"
            try Data("linked in".utf8).write(to: URL(fileURLWithPath: elsewhere))
            #expect(link(elsewhere, harness.outbox + "/linked.bin") == 0)
            harness.clock.advance(by: SyncHarness.rescanInterval)
            await uploader.nextStart()
            _ = try await DirectoryWatcher.wait(for: harness.outbox) { $0.isEmpty }
            #expect(uploader.uploads.map(\.fileName) == ["linked.bin"])
        }
    }

    @Test func aFileWrittenInPlaceIsTakenOnceItHasSettled() async throws {
        let uploader = FakeUploader()
        let settle = Duration.seconds(5)
        try await SyncHarness.with(settleTime: settle, uploader: uploader, before: { outbox in
            // Found by the first rescan, modified a moment ago: not taken yet.
            try Data("in place".utf8).write(to: URL(fileURLWithPath: outbox + "/report.csv"))
        }) { harness in
            // The settle loop sleeps the settle time, the rescan loop's interval after it.
            await harness.clock.sleepers(atLeast: 1)
            #expect(uploader.uploads.isEmpty)
            // Its writer is done: its modification time is an hour old by the time the loop wakes.
            try FileManager.default.setAttributes([.modificationDate: Date().addingTimeInterval(-3600)], ofItemAtPath: harness.outbox + "/report.csv")
            harness.clock.advance(by: settle)
            await uploader.nextStart()
            _ = try await DirectoryWatcher.wait(for: harness.outbox) { $0.isEmpty }
            #expect(uploader.uploads.map(\.fileName) == ["report.csv"])
        }
    }
}

extension SyncServiceTests {
    @Test func whileAnIncidentHoldsUploadsBackTheStoreIsTheQueueAndItsEndReleasesAll() async throws {
        let uploader = FakeUploader()
        try await SyncHarness.with(uploader: uploader) { harness in
            // An operator pauses sync: an incident holds its jobs back.
            let pause = await harness.bus.pause(SyncService.service)
            for number in 0..<10 { try harness.drop("item-\(number).bin") }
            // Nothing is claimed: the ten wait in the store, parked under the pause, and the bus
            // holds none.
            await harness.waitForParked(10)
            let parked = try harness.store.jobs(state: .parked)
            #expect(parked.count == 10 && parked.allSatisfy { $0.incident == pause.rawValue && !$0.failedUnder })
            #expect(await harness.bus.snapshot().parkedJobs == 0)
            #expect(uploader.uploads.isEmpty)
            // Each written once: parked as it was taken in, never queued first.
            let parkings = harness.logs.entries.map(\.message).filter { $0.hasPrefix("parked ") }
            #expect(!parkings.isEmpty && parkings.allSatisfy { $0.contains(" new jobs under incident \(pause)") }, "\(parkings)")

            // Its end wakes the dispatcher: every file goes.
            #expect(await harness.bus.resume(SyncService.service) == 1)
            _ = try await DirectoryWatcher.wait(for: harness.outbox) { $0.isEmpty }
            #expect(Set(uploader.uploads.map(\.fileName)) == Set((0..<10).map { "item-\($0).bin" }))
            #expect(try harness.store.counts() == JobCounts([.delivered: 10]))
        }
    }

    @Test func anOutagesUploadsWaitAsParkedRowsAndTheBusHoldsNone() async throws {
        let uploader = FakeUploader(gated: true, failing: true)
        try await SyncHarness.with(concurrency: 2, uploader: uploader) { harness in
            for number in 0..<6 { try harness.drop("item-\(number).bin") }
            // Two uploads fail together and open an incident; the jobs claimed with them meet
            // it before they run. Each is a parked row under it.
            await uploader.nextStart()
            await uploader.nextStart()
            uploader.release()
            uploader.release()
            await harness.waitForParked(6)
            let incident = try #require(await harness.bus.snapshot().incidents.first?.id)
            let parked = try harness.store.jobs(state: .parked)
            #expect(parked.allSatisfy { $0.incident == incident.rawValue })
            #expect(parked.filter(\.failedUnder).count == 2)
            #expect(await harness.bus.snapshot().parkedJobs == 0)
            #expect(try harness.store.counts().inFlight == 0)
        }
    }

    /// An incident's release is over, and its settle window starts, once the jobs it released
    /// have run, each verdict recorded: not when they are queued again, nor when the queue is
    /// empty (a file taken in after the release is not its).
    @Test func anIncidentsReleaseIsOverOnceTheJobsItReleasedHaveRun() async throws {
        let uploader = FakeUploader(gated: true, failing: true)
        try await SyncHarness.with(concurrency: 1, settleWindow: .zero, uploader: uploader) { harness in
            let events = await harness.bus.subscribe()
            var resolved = events.filter { $0.kind == .incidentResolved }.makeAsyncIterator()
            for number in 0..<4 { try harness.drop("item-\(number).bin") }
            await uploader.nextStart()
            uploader.release()
            await harness.waitForParked(4)
            let incident = try #require(await harness.bus.snapshot().incidents.first)

            // The API is back: the canary, one of the parked jobs, is delivered; the release
            // queues the other three again (the one that failed a second behind), and the
            // dispatcher runs them one at a time.
            uploader.heal()
            harness.busClock.advance(by: try #require(incident.next?.delay))
            await uploader.nextStart()
            uploader.release()
            await uploader.nextStart()
            harness.clock.advance(by: SyncService.failedReleaseDelay)
            uploader.release()
            await uploader.nextStart()
            uploader.release()
            await uploader.nextStart()
            // The last released job is under way: the release is not over. A file taken in now
            // is not the release's.
            #expect(await harness.bus.snapshot().incidents.map(\.state) == [.releasing])
            try harness.drop("item-4.bin")
            uploader.release()

            // Its verdict recorded, the incident settles (at once: no settle window), while the
            // file taken in after the release still waits for its upload.
            let end = try #require(await resolved.next())
            #expect(end.incident?.id == incident.id && end.incident?.resolution == .recovered)
            #expect(try harness.store.counts().delivered == 4)
            await uploader.nextStart()
            #expect(uploader.uploads.map(\.fileName).last == "item-4.bin")
            uploader.release()
            _ = try await DirectoryWatcher.wait(for: harness.outbox) { $0.isEmpty }
        }
    }

    @Test func aRestartTakesTheStoresWordForTheFilesItQueuedWithoutReadingThem() async throws {
        let uploader = FakeUploader()
        try await SyncHarness.with(uploader: uploader, before: { outbox in
            try Data("queued before the restart".utf8).write(to: URL(fileURLWithPath: outbox + "/kept.bin"))
        }, prepare: { store, outbox in
            // The job a previous run queued for it, under a key no reading of the file gives:
            // read again, the file would be queued as a job of its own beside it.
            let status = try #require(try FileStatus.ofLink(outbox + "/kept.bin"))
            var job = OutboxFile(id: "queued-by-the-last-run", service: "sync", fileName: "kept.bin", path: outbox + "/kept.bin", size: status.size)
            job.modifiedNanoseconds = FileStamp(status).modifiedSinceEpoch
            _ = try await store.enqueue([job])
        }) { harness in
            await uploader.nextStart()
            _ = try await DirectoryWatcher.wait(for: harness.outbox) { $0.isEmpty }
            #expect(uploader.uploads.map(\.id) == ["queued-by-the-last-run"])
            #expect(try harness.store.counts().total == 1)
        }
    }
}

/// A sync service with its store, its bus and its outbox, for one test.
struct SyncHarness {
    static let rescanInterval = Duration.seconds(60)

    let root: String
    let outbox: String
    let store: JobStore
    let bus: ErrorBus
    let sync: SyncService
    /// The sync service's clock.
    let clock: ManualClock
    /// The bus's clock, which its policies wait on.
    let busClock: ManualClock
    /// What the bus and the service logged.
    let logs: LogRecorder

    /// Waits until the service has parked at least `count` jobs under any incident, as it logs
    /// them (``ParkingLog``).
    func waitForParked(_ count: Int) async {
        await logs.wait { entries in ParkingLog.parked(in: entries.map(\.message).joined(separator: "\n"), under: nil) >= count }
    }

    /// How many times the bus turned a job away because parking was full (each counts as an
    /// attempt of that job).
    func turnedAway() throws -> Int {
        try store.jobs().filter { $0.lastError == "parking full" }.map(\.attempts).reduce(0, +)
    }

    /// Drops a file into the outbox the way a writer should: written aside, renamed in.
    func drop(_ name: String) throws {
        let staged = root + "/." + name
        try Data("content of \(name)".utf8).write(to: URL(fileURLWithPath: staged))
        #expect(rename(staged, outbox + "/" + name) == 0)
    }

    static func with(
        concurrency: Int = 4,
        maxParkedJobs: Int = 100_000,
        settleTime: Duration = .zero,
        settleWindow: Duration? = nil,
        uploader: FakeUploader,
        before: (String) throws -> Void = { _ in },
        prepare: (JobStore, String) async throws -> Void = { _, _ in },
        _ body: (SyncHarness) async throws -> Void
    ) async throws {
        // The store's dates move with the service's clock, as the service's own do.
        let clock = ManualClock()
        try await StoreTestDirectory.withStore(clock: WallClock(clock)) { store, state in
            let root = (state as NSString).deletingLastPathComponent
            let outbox = root + "/outbox"
            try FileManager.default.createDirectory(atPath: outbox, withIntermediateDirectories: false)
            try before(outbox)
            try await prepare(store, outbox)
            let logs = LogRecorder()
            let logger = logs.logger
            var configuration = ErrorBusConfiguration()
            configuration.maxParkedJobs = maxParkedJobs
            // The dispatcher's own bound is what these tests look at: the bus lets every upload
            // it starts run at once.
            configuration.concurrency = .fixed(max(concurrency, 1))
            // Released jobs go at once, without a wait on that clock.
            configuration.release.spread = .zero
            if let settleWindow { configuration.settleWindow = settleWindow }
            // The bus's policies wait on a clock of their own, which only the tests that look at
            // them move.
            let busClock = ManualClock()
            let bus = ErrorBus(configuration: configuration, clock: busClock, logger: logger)
            let settings = SyncService.Settings(
                outbox: outbox,
                afterDelivery: .delete,
                concurrency: concurrency,
                maxFileSize: 1 << 20,
                rescanInterval: rescanInterval,
                settleTime: settleTime,
                scope: "https://api.test",
                realm: "api",
                requestTimeout: .seconds(5)
            )
            let sync = SyncService(settings: settings, store: store, bus: bus, clock: clock, logger: logger) { _ in uploader }
            try await withThrowingTaskGroup(of: Void.self) { group in
                group.addTask { await bus.run() }
                group.addTask { try await sync.run() }
                defer { group.cancelAll() }
                try await body(SyncHarness(root: root, outbox: outbox, store: store, bus: bus, sync: sync, clock: clock, busClock: busClock, logs: logs))
            }
        }
    }
}

/// Uploads nothing: records each job, optionally waits for the test to release it, optionally
/// fails it as a `transient` failure of the API's host.
final class FakeUploader: Uploading {
    private struct State {
        var uploads: [OutboxFile] = []
        var running = 0
        var peak = 0
    }

    private let state = Mutex(State())
    private let gated: Bool
    private let failing: Mutex<Bool>
    private let (starts, started) = AsyncStream.makeStream(of: Void.self)
    /// Releases not yet taken, and gated uploads waiting for one.
    private let gate = Mutex<(permits: Int, waiting: [CheckedContinuation<Void, Never>])>((0, []))

    init(gated: Bool = false, failing: Bool = false) {
        self.gated = gated
        self.failing = Mutex(failing)
    }

    /// Uploads succeed from now on.
    func heal() {
        failing.withLock { $0 = false }
    }

    var uploads: [OutboxFile] { state.withLock { $0.uploads } }
    /// The most uploads that ran at once.
    var peak: Int { state.withLock { $0.peak } }

    /// Waits until one more upload has started.
    func nextStart() async {
        var iterator = starts.makeAsyncIterator()
        _ = await iterator.next()
    }

    /// Lets one gated upload finish.
    func release() {
        let waiter: CheckedContinuation<Void, Never>? = gate.withLock { gate in
            guard !gate.waiting.isEmpty else {
                gate.permits += 1
                return nil
            }
            return gate.waiting.removeFirst()
        }
        waiter?.resume()
    }

    func upload(_ job: OutboxFile, queuedAt: Date) async throws -> FileStatus? {
        state.withLock {
            $0.uploads.append(job)
            $0.running += 1
            $0.peak = max($0.peak, $0.running)
        }
        defer { state.withLock { $0.running -= 1 } }
        started.yield()
        if gated {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                let go = gate.withLock { gate in
                    guard gate.permits > 0 else {
                        gate.waiting.append(continuation)
                        return false
                    }
                    gate.permits -= 1
                    return true
                }
                if go { continuation.resume() }
            }
        }
        if failing.withLock({ $0 }) { throw Unavailable() }
        return nil
    }

    struct Unavailable: CategorizedError {
        var category: ErrorCategory { .transient }
        var cause: String { "http503" }
        var scope: String? { "https://api.test" }
        var operatorText: OperatorText { OperatorText(title: "API unavailable", message: "The fake API is down.") }
    }
}
