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

    @Test func aFullParkingPausesNewJobsForOneSecondOfTheClock() async throws {
        let uploader = FakeUploader(gated: true, failing: true)
        try await SyncHarness.with(concurrency: 2, maxParkedJobs: 1, uploader: uploader) { harness in
            for number in 0..<3 { try harness.drop("item-\(number).bin") }
            // Two uploads fail together: one parks, and what comes next finds parking full.
            await uploader.nextStart()
            await uploader.nextStart()
            uploader.release()
            uploader.release()
            // The dispatcher pauses: the rescan loop and the pause's end sleep on its clock.
            await harness.clock.sleepers(atLeast: 2)
            let turnedAway = try harness.turnedAway()
            #expect(turnedAway >= 1)
            // A second later the dispatcher tries again, finds parking still full, and pauses
            // again. (No upload runs meanwhile: the bus turns the jobs away at admission.)
            harness.clock.advance(by: SyncService.parkingFullPause)
            await harness.clock.sleepers(atLeast: 2)
            #expect(try harness.turnedAway() > turnedAway)
            #expect(uploader.uploads.count == 2)
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
        try await SyncHarness.with(parkedInMemory: 2, uploader: uploader) { harness in
            // An operator pauses sync: an incident holds its jobs back.
            let pause = await harness.bus.pause(SyncService.service)
            for number in 0..<10 { try harness.drop("item-\(number).bin") }
            // The bus parks two; the other eight wait in the store, queued, not in memory. The
            // dispatcher claims the two (in flight in the store) before the bus parks them, so the
            // queue's eight alone do not say the two are parked yet: wait for the bus first.
            await harness.bus.waitUntilParked(2)
            while await harness.sync.heldQueue()?.jobs != 8 { try await Task.sleep(for: .milliseconds(5)) }
            #expect(await harness.bus.heldJobs(service: SyncService.service).count == 2)
            #expect(try harness.store.counts() == JobCounts([.queued: 8, .inFlight: 2]))
            #expect(await harness.sync.heldQueue() == HeldQueue(service: SyncService.service, incident: pause, jobs: 8))
            #expect(uploader.uploads.isEmpty)

            // Its end wakes the dispatcher: every file goes, the two parked and the eight queued.
            #expect(await harness.bus.resume(SyncService.service) == 1)
            _ = try await DirectoryWatcher.wait(for: harness.outbox) { $0.isEmpty }
            #expect(Set(uploader.uploads.map(\.fileName)) == Set((0..<10).map { "item-\($0).bin" }))
            #expect(try harness.store.counts().delivered == 10)
            #expect(await harness.sync.heldQueue() == nil)
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
        parkedInMemory: Int = 1_000,
        maxParkedJobs: Int = 100_000,
        settleTime: Duration = .zero,
        uploader: FakeUploader,
        before: (String) throws -> Void = { _ in },
        prepare: (JobStore, String) async throws -> Void = { _, _ in },
        _ body: (SyncHarness) async throws -> Void
    ) async throws {
        try await StoreTestDirectory.withStore { store, state in
            let root = (state as NSString).deletingLastPathComponent
            let outbox = root + "/outbox"
            try FileManager.default.createDirectory(atPath: outbox, withIntermediateDirectories: false)
            try before(outbox)
            try await prepare(store, outbox)
            let logger = Logger(label: "sync-tests") { _ in SwiftLogNoOpLogHandler() }
            var configuration = ErrorBusConfiguration()
            configuration.maxParkedJobs = maxParkedJobs
            // The dispatcher's own bound is what these tests look at: the bus lets every upload
            // it starts run at once.
            configuration.concurrency = .fixed(max(concurrency, 1))
            // Released jobs go at once, without a wait on that clock.
            configuration.release.spread = .zero
            // The bus's policies wait on a clock of their own, which these tests never move.
            let bus = ErrorBus(configuration: configuration, clock: ManualClock(), logger: logger)
            let clock = ManualClock()
            let settings = SyncService.Settings(
                outbox: outbox,
                afterDelivery: .delete,
                concurrency: concurrency,
                parkedInMemory: parkedInMemory,
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
                try await body(SyncHarness(root: root, outbox: outbox, store: store, bus: bus, sync: sync, clock: clock))
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
    private let failing: Bool
    private let (starts, started) = AsyncStream.makeStream(of: Void.self)
    /// Releases not yet taken, and gated uploads waiting for one.
    private let gate = Mutex<(permits: Int, waiting: [CheckedContinuation<Void, Never>])>((0, []))

    init(gated: Bool = false, failing: Bool = false) {
        self.gated = gated
        self.failing = failing
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

    func upload(_ job: OutboxFile) async throws -> FileStatus? {
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
        if failing { throw Unavailable() }
        return nil
    }

    struct Unavailable: CategorizedError {
        var category: ErrorCategory { .transient }
        var cause: String { "http503" }
        var scope: String? { "https://api.test" }
        var operatorText: OperatorText { OperatorText(title: "API unavailable", message: "The fake API is down.") }
    }
}
