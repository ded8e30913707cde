import Crypto
import ErrorBusDaemon
import ErrorBusControl
import Foundation
import Glibc
import Logging
@testable import Sandbox
import ErrorBusStore
import TestSupport
import Varlink
import Testing

/// The real `errorbusd` against the real `errorbus-sandbox`, over loopback, as separate processes.
/// Every wait is for something the processes say (a log line, a file leaving the outbox); none is
/// a sleep.
@Suite("Integration: errorbusd against the sandbox", .serialized, .timeLimit(.minutes(2)))
struct DaemonIntegrationTests {
    /// The jobs errorbusd's bus holds, as the control API lists them.
    static func parkedJobs(of daemon: DaemonProcess) async throws -> [Control.Job] {
        try await ControlIntegrationTests.varlink(daemon) { try await $0.call(Control.listJobs, .init(state: .parked, limit: 1000)) }.jobs
    }

    /// Expects every one of `count` jobs to wait under incident `incident`, but for the one it may
    /// be running as its canary (the first is due 0–1 s after it opened), in one read of the
    /// store: each a `parked` row, and the canary in flight.
    static func expectParked(_ count: Int, under incident: Int, in daemon: DaemonProcess, sourceLocation: SourceLocation = #_sourceLocation) async throws {
        let parked = try await parkedJobs(of: daemon)
        #expect((count - 1...count).contains(parked.count), "\(parked.count) parked", sourceLocation: sourceLocation)
        #expect(Set(parked.map(\.incident)) == [incident], sourceLocation: sourceLocation)
        let counts = try store(of: daemon).counts()
        let (stored, running) = (counts["parked", default: 0], counts["inFlight", default: 0])
        #expect(stored + running == count && running <= 1, "\(counts)", sourceLocation: sourceLocation)
    }

    static func content(_ number: Int) -> Data {
        Data("outbox item \(number)\n".utf8) + Data(repeating: UInt8(number % 251), count: 4096)
    }

    static func key(of data: Data) -> String {
        SHA256.hash(data: data).map { String(format: "%02x", $0) }.joined()
    }

    /// The store the daemon keeps, read from the test.
    static func store(of daemon: DaemonProcess) throws -> StateDatabase {
        try StateDatabase(directory: daemon.stateDirectory)
    }

    /// Runs `body` with a sandbox and a started daemon, and stops both.
    static func withDaemon(
        extra: String = "",
        environment: [String: String] = [:],
        beforeStart: (SandboxProcess, DaemonProcess) async throws -> Void = { _, _ in },
        _ body: (SandboxProcess, DaemonProcess) async throws -> Void
    ) async throws {
        let scratch = try ScratchDirectory("daemon")
        let sandbox = try await SandboxProcess(in: scratch)
        let daemon = try DaemonProcess(in: scratch, sandbox: sandbox, extra: extra, environment: environment)
        do {
            try await beforeStart(sandbox, daemon)
            try await daemon.start()
            try await body(sandbox, daemon)
            let finished = try await daemon.stop()
            #expect(finished.status == 0, "errorbusd exited with \(finished.status):\n\(finished.standardError)")
        } catch {
            _ = try? await daemon.kill()
            try? await sandbox.stop()
            throw error
        }
        try await sandbox.stop()
    }

    @Test func everyOutboxFileIsDeliveredOnce() async throws {
        try await Self.withDaemon { sandbox, daemon in
            var expected: [String: String] = [:]
            for number in 0..<40 {
                let data = Self.content(number)
                try daemon.drop("item-\(number).bin", content: data)
                expected[Self.key(of: data)] = Self.key(of: data)
            }
            // A second file with content the outbox already has is one item, not two.
            try daemon.drop("copy-of-item-0.bin", content: Self.content(0))
            try await DirectoryWatcher.wait(for: daemon.outbox) { $0.isEmpty }

            let items = try await sandbox.items()
            #expect(Set(items.keys) == Set(expected.keys))
            #expect(items.values.allSatisfy { $0.sha256 == $0.id })
            let stats = try await sandbox.stats()
            #expect(stats.items.uploads == 40)
            #expect(stats.items.duplicatesAbsorbed == 0)
            #expect(try Self.store(of: daemon).count(.delivered) == 40)
        }
    }

    /// `sync.parked-in-memory` no longer means anything: a configuration that sets it still
    /// starts, and is told to remove it; one that leaves it alone hears nothing of it.
    @Test func theDeprecatedParkedInMemoryKeyIsAcceptedWithAWarning() async throws {
        try await Self.withDaemon(environment: ["ERRORBUSD_SYNC_PARKED_IN_MEMORY": "3"]) { _, daemon in
            try await daemon.waitForLog("sync.parked-in-memory is deprecated and ignored")
        }
        try await Self.withDaemon { _, daemon in
            #expect(!daemon.log.contains("parked-in-memory"))
        }
    }

    @Test func anOutageParksEveryJobInOneIncidentAndRecoveryDeliversAll() async throws {
        try await Self.withDaemon { sandbox, daemon in
            try await sandbox.fault(#"{"route":"all","mode":"down"}"#)
            for number in 0..<30 { try daemon.drop("item-\(number).bin", content: Self.content(number)) }
            try await daemon.waitForParked(30, under: 1)
            try await Self.expectParked(30, under: 1, in: daemon)

            try await sandbox.clearFaults()
            try await daemon.waitForLog("incident 1 recovered")
            // The incident log tells each incident's steps in order: one opened before it.
            #expect(daemon.log.components(separatedBy: "opened:").count - 1 == 1)
            try await DirectoryWatcher.wait(for: daemon.outbox) { $0.isEmpty }
            #expect(try await sandbox.items().count == 30)
        }
    }

    @Test func aTokenExpiryCostsExactlyOneTokenRequest() async throws {
        try await Self.withDaemon { sandbox, daemon in
            for number in 0..<10 { try daemon.drop("before-\(number).bin", content: Self.content(number)) }
            try await DirectoryWatcher.wait(for: daemon.outbox) { $0.isEmpty }
            let before = try await sandbox.stats().tokens.requests

            try await sandbox.fault(#"{"mode":"expireTokens"}"#)
            for number in 10..<40 { try daemon.drop("after-\(number).bin", content: Self.content(number)) }
            try await DirectoryWatcher.wait(for: daemon.outbox) { $0.isEmpty }

            let stats = try await sandbox.stats()
            #expect(stats.tokens.requests == before + 1)
            #expect(stats.requests.byRoute["items"]?["401"] ?? 0 >= 1)
            #expect(try await sandbox.items().count == 40)
        }
    }

    /// Every token revoked while uploads are in flight with it, their answers slow: the refusals
    /// that come after the new token was fetched refused the old one, and cost nothing more.
    @Test func tokensRevokedWithUploadsInFlightCostExactlyOneTokenRequest() async throws {
        try await Self.withDaemon { sandbox, daemon in
            try daemon.drop("first.bin", content: Self.content(100))
            try await DirectoryWatcher.wait(for: daemon.outbox) { $0.isEmpty }
            let before = try await sandbox.stats().tokens.requests

            // Each upload's answer comes a second after it was sent, its token checked then.
            try await sandbox.fault(#"{"route":"items","mode":"slow","delayMs":1000}"#)
            for number in 0..<16 { try daemon.drop("slow-\(number).bin", content: Self.content(number)) }
            try await daemon.waitForLog("claiming queued jobs")
            try await sandbox.fault(#"{"mode":"expireTokens"}"#)
            try await DirectoryWatcher.wait(for: daemon.outbox) { $0.isEmpty }

            let stats = try await sandbox.stats()
            #expect(stats.tokens.requests == before + 1)
            #expect(stats.requests.byRoute["items"]?["401"] ?? 0 >= 2, "\(stats.requests.byRoute)")
            #expect(try await sandbox.items().count == 17)
            #expect(BoundedLossIntegrationTests.occurrences(of: "opened: ", in: daemon.log) <= 1, "\(daemon.log)")
        }
    }

    @Test func uploadsNeedingATokenParkWhileTheTokenEndpointIsDown() async throws {
        // The first token request fails: every upload asks for a token, gets the endpoint's
        // failure, and parks in the host's incident; none waits on a token request that is
        // itself parked behind them.
        try await Self.withDaemon(beforeStart: { sandbox, _ in try await sandbox.fault(#"{"route":"token","mode":"down"}"#) }) { sandbox, daemon in
            for number in 0..<10 { try daemon.drop("item-\(number).bin", content: Self.content(number)) }
            try await daemon.waitForParked(10, under: 1)
            try await Self.expectParked(10, under: 1, in: daemon)

            try await sandbox.clearFaults()
            try await daemon.waitForLog("incident 1 recovered")
            try await DirectoryWatcher.wait(for: daemon.outbox) { $0.isEmpty }
            #expect(try await sandbox.items().count == 10)
        }
    }

    @Test func a429WithRetryAfterIsHonoured() async throws {
        try await Self.withDaemon { sandbox, daemon in
            try await sandbox.fault(#"{"route":"items","mode":"status","status":429,"retryAfter":2}"#)
            for number in 0..<5 { try daemon.drop("item-\(number).bin", content: Self.content(number)) }
            // Every job answered 429 or held back unsent, before the API recovers.
            try await daemon.waitForParked(5, under: 1)
            try await sandbox.clearFaults()
            try await DirectoryWatcher.wait(for: daemon.outbox) { $0.isEmpty }

            let recent = try #require(try await sandbox.stats().recent).filter { $0.route == "items" }
            let limited = recent.filter { $0.outcome == "429" }
            let lastLimited = try #require(limited.map(\.ms).max())
            let firstAfter = try #require(recent.filter { $0.outcome != "429" }.map(\.ms).min())
            // Nothing reached the API before the hint had passed.
            #expect(firstAfter - lastLimited >= 2_000)
            #expect(try await sandbox.items().count == 5)
        }
    }

    @Test func anInvalidPayloadIsDeadLetteredWithTheServersReason() async throws {
        try await Self.withDaemon { sandbox, daemon in
            try await sandbox.fault(#"{"route":"items","mode":"invalid","detail":"field 'customer' is required"}"#)
            for number in 0..<3 { try daemon.drop("bad-\(number).bin", content: Self.content(number)) }
            // Logged by the sync service once the store has the dead letter.
            try await daemon.waitForLog("set aside as a dead letter: ", count: 3)
            let dead = try Self.store(of: daemon).jobs(.deadLettered)
            #expect(dead.count == 3)
            #expect(dead.allSatisfy { $0.reason?.contains("field 'customer' is required") == true })
            // Dead letters stay where the operator can see them.
            #expect(try daemon.outboxFiles().count == 3)
            // One incident for the three, as the store recorded them (the incident log's own
            // line is written by another task, after its history row).
            #expect(Set(dead.map(\.incident)) == [1])
        }
    }

    /// No canary while the files change under the incident: one that took the removed or the
    /// changed file before the rescan saw it would end the incident ("its cause is gone") and park
    /// the new content under another; the operator's retry lets the incident try them once the
    /// API is back.
    static let noCanaryUntilRetried = ["ERRORBUSD_BUS_BACKOFF_BASE": "1h", "ERRORBUSD_BUS_BACKOFF_CAP": "1h"]

    @Test func aFileAppendedToOrRemovedWhileParkedIsToldWhichHappened() async throws {
        try await Self.withDaemon(environment: Self.noCanaryUntilRetried) { sandbox, daemon in
            try await sandbox.fault(#"{"route":"all","mode":"down"}"#)
            let changed = daemon.outbox + "/" + (try daemon.drop("changed.bin", content: Self.content(1)))
            let removed = daemon.outbox + "/" + (try daemon.drop("removed.bin", content: Self.content(2)))
            try await daemon.waitForParked(2, under: 1)
            let handle = try #require(FileHandle(forWritingAtPath: changed))
            try handle.seekToEnd()
            try handle.write(contentsOf: Data("appended after it was queued".utf8))
            try handle.close()
            let appended = try Data(contentsOf: URL(fileURLWithPath: changed))
            try FileManager.default.removeItem(atPath: removed)
            try await daemon.waitForParked(3, under: 1)
            try await sandbox.clearFaults()
            _ = try await ControlIntegrationTests.ctl(daemon, "retry", "1")

            // The file appended to is its new content, sent; what it held is given up, not sent.
            try await DirectoryWatcher.wait(for: daemon.outbox) { $0.isEmpty }
            try await daemon.waitForLog("set aside as a dead letter: ")
            #expect(try await sandbox.items().keys.sorted() == [Self.key(of: appended)])
            let store = try Self.store(of: daemon)
            let dead = try store.jobs(.deadLettered)
            #expect(dead.map(\.fileName) == ["removed.bin"])
            #expect(dead.first?.reason?.contains("removed.bin was removed from the outbox") == true)
            let replaced = try store.jobs(.discarded)
            #expect(replaced.map(\.id) == [Self.key(of: Self.content(1))])
            #expect(replaced.first?.reason?.contains("changed.bin was replaced after it was queued") == true)
        }
    }

    @Test func aFileReplacedWhileItWaitsIsSentOnlyAsItsNewContent() async throws {
        try await Self.withDaemon(environment: Self.noCanaryUntilRetried) { sandbox, daemon in
            try await sandbox.fault(#"{"route":"all","mode":"down"}"#)
            // A small file replaced by rename, and one of several chunks rewritten in place: the
            // same size, other bytes.
            let (small, smallAgain) = (Data(#"{"v":1}"#.utf8), Data(#"{"v":2}"#.utf8))
            let large = Data(repeating: 1, count: 200 * 1024)
            var largeAgain = large
            largeAgain[largeAgain.count - 1] = 2
            try daemon.drop("status.json", content: small)
            try daemon.drop("large.bin", content: large)
            try await daemon.waitForParked(2, under: 1)
            try daemon.drop("status.json", content: smallAgain)
            let handle = try #require(FileHandle(forWritingAtPath: daemon.outbox + "/large.bin"))
            try handle.write(contentsOf: largeAgain)
            try handle.close()
            try await daemon.waitForParked(4, under: 1)
            try await sandbox.clearFaults()
            _ = try await ControlIntegrationTests.ctl(daemon, "retry", "1")

            try await DirectoryWatcher.wait(for: daemon.outbox) { $0.isEmpty }
            try await daemon.waitForLog("Replaced before it was sent", count: 2)
            // What the API holds is each file's new content under its own key, and nothing else.
            let items = try await sandbox.items()
            #expect(Set(items.keys) == [Self.key(of: smallAgain), Self.key(of: largeAgain)])
            for item in items.values { #expect(item.id == item.sha256) }
            let store = try Self.store(of: daemon)
            #expect(try store.jobs(.deadLettered).isEmpty)
            let replaced = try store.jobs(.discarded)
            #expect(Set(replaced.map(\.id)) == [Self.key(of: small), Self.key(of: large)])
            #expect(replaced.allSatisfy { $0.reason?.contains("was replaced after it was queued") == true })
        }
    }

    /// The job is discarded while it waits, not while it is the canary (a running job is
    /// discarded only when its run ends).
    @Test func contentDiscardedOnceIsSentWhenItArrivesAgain() async throws {
        try await Self.withDaemon(environment: Self.noCanaryUntilRetried) { sandbox, daemon in
            try await sandbox.fault(#"{"route":"all","mode":"down"}"#)
            let heartbeat = Data("0 events\n".utf8)
            try daemon.drop("hb.txt", content: heartbeat)
            try await daemon.waitForParked(1, under: 1)
            let id = Self.key(of: heartbeat)
            #expect(try await ControlIntegrationTests.ctl(daemon, "discard", "--job", id).status == 0)
            #expect(try Self.store(of: daemon).jobs(.discarded).map(\.fileName) == ["hb.txt"])
            try await sandbox.clearFaults()
            _ = try await ControlIntegrationTests.ctl(daemon, "retry", "1")

            // The producer writes the same bytes again, and once more under another name.
            try FileManager.default.removeItem(atPath: daemon.outbox + "/hb.txt")
            try daemon.drop("hb.txt", content: heartbeat)
            try daemon.drop("hb2.txt", content: heartbeat)
            try await DirectoryWatcher.wait(for: daemon.outbox) { $0.isEmpty }
            #expect(try await sandbox.items().keys.sorted() == [id])
            #expect(daemon.log.contains("has the content of a job discarded before"))
            #expect(try Self.store(of: daemon).jobs(.delivered).map(\.id) == [id])
        }
    }

    @Test func aReloadOnSIGHUPKeepsParkedJobs() async throws {
        try await Self.withDaemon { sandbox, daemon in
            try await sandbox.fault(#"{"route":"all","mode":"down"}"#)
            for number in 0..<10 { try daemon.drop("item-\(number).bin", content: Self.content(number)) }
            try await daemon.waitForParked(10, under: 1)

            let configuration = try String(contentsOfFile: daemon.configurationFile, encoding: .utf8)
            try configuration.replacingOccurrences(of: "concurrency: 8", with: "concurrency: 4")
                .write(toFile: daemon.configurationFile, atomically: true, encoding: .utf8)
            try daemon.signal(SIGHUP)
            try await daemon.waitForLog("configuration reloaded")
            try await Self.expectParked(10, under: 1, in: daemon)

            try await sandbox.clearFaults()
            try await DirectoryWatcher.wait(for: daemon.outbox) { $0.isEmpty }
            #expect(try await sandbox.items().count == 10)
        }
    }

    /// SIGHUP reads the drop-ins too, and says which of their changes wait for a restart.
    @Test func aReloadReadsTheDropInsAndTellsWhatTakesARestart() async throws {
        try await Self.withDaemon { _, daemon in
            let dropIns = daemon.configurationFile + ".d"
            try FileManager.default.createDirectory(atPath: dropIns, withIntermediateDirectories: true)
            try "log:\n  level: info\nsync:\n  concurrency: 2\n".write(toFile: dropIns + "/10-local.yaml", atomically: true, encoding: .utf8)
            try daemon.signal(SIGHUP)
            try await daemon.waitForLog("configuration reloaded")
            #expect(daemon.log.contains("log.level changed: it applies when errorbusd restarts"))
            #expect(!daemon.log.contains("sync.concurrency changed"))
        }
    }

    @Test func aBrokenConfigurationOnSIGHUPKeepsTheRunningOne() async throws {
        try await Self.withDaemon { _, daemon in
            let configuration = try String(contentsOfFile: daemon.configurationFile, encoding: .utf8)
            try configuration.replacingOccurrences(of: "concurrency: 8", with: "concurrency: eight")
                .write(toFile: daemon.configurationFile, atomically: true, encoding: .utf8)
            try daemon.signal(SIGHUP)
            try await daemon.waitForLog("reload failed, keeping the running configuration")
            #expect(daemon.log.contains("sync.concurrency"))
            try daemon.drop("still-working.bin", content: Self.content(1))
            try await DirectoryWatcher.wait(for: daemon.outbox) { $0.isEmpty }
        }
    }

    @Test func sigtermMidUploadThenRestartDeliversEverything() async throws {
        let scratch = try ScratchDirectory("sigterm")
        let sandbox = try await SandboxProcess(in: scratch)
        // Every upload in flight at once, without a slow start, when the signal comes.
        let daemon = try DaemonProcess(in: scratch, sandbox: sandbox, environment: ["ERRORBUSD_BUS_CONCURRENCY_INITIAL": "16"])
        try await daemon.start()
        // Slow answers keep uploads in flight when the signal comes.
        try await sandbox.fault(#"{"route":"items","mode":"slow","delayMs":1500}"#)
        for number in 0..<20 { try daemon.drop("item-\(number).bin", content: Self.content(number)) }
        #expect(await sandbox.process.standardError.wait(for: "sandbox.fault="))
        let stopped = try await daemon.stop()
        #expect(stopped.status == 0)
        #expect(stopped.standardError.contains("sync stopped"))

        try await sandbox.clearFaults()
        try await daemon.start()
        try await DirectoryWatcher.wait(for: daemon.outbox) { $0.isEmpty }
        #expect(try await sandbox.items().count == 20)
        #expect(try await daemon.stop().status == 0)
        try await sandbox.stop()
    }

    /// A file removed while errorbusd was stopped (by hand, or its removal kept by a power loss
    /// that undid its delivery's record): its job is discarded at start, before any upload, and
    /// said once; the others keep waiting.
    @Test func aJobWhoseFileWentWhileStoppedIsDiscardedAtStart() async throws {
        try await Self.withDaemon(environment: Self.noCanaryUntilRetried) { sandbox, daemon in
            try await sandbox.fault(#"{"route":"all","mode":"down"}"#)
            let gone = try daemon.drop("gone.bin", content: Self.content(1))
            try daemon.drop("kept.bin", content: Self.content(2))
            try await daemon.waitForParked(2, under: 1)
            #expect(try await daemon.stop().status == 0)
            try FileManager.default.removeItem(atPath: daemon.outbox + "/" + gone)
            try await daemon.start()
            try await daemon.waitForLog("1 queued jobs had lost their files and were discarded")
            let store = try Self.store(of: daemon)
            let discarded = try store.jobs(.discarded)
            #expect(discarded.map(\.fileName) == ["gone.bin"])
            #expect(discarded.first?.reason?.contains("Its file was gone at start") == true)
        }
    }

    /// The state a stop between recording a delivery and removing the file leaves: the file of
    /// a delivered job, at the same path. It is removed, not uploaded again, not left forever.
    @Test func theFileOfADeliveredJobIsRemovedWithoutASecondUpload() async throws {
        try await Self.withDaemon { sandbox, daemon in
            try daemon.drop("again.bin", content: Self.content(7))
            try await DirectoryWatcher.wait(for: daemon.outbox) { $0.isEmpty }
            try daemon.drop("again.bin", content: Self.content(7))
            try await DirectoryWatcher.wait(for: daemon.outbox) { $0.isEmpty }
            let puts = try #require(try await sandbox.stats().recent).filter { $0.route == "items" }
            #expect(puts.count == 1)
        }
    }

    @Test func aFileInTheOutboxAtStartIsTakenOnceSettledNotAtTheNextRescan() async throws {
        // Written just before errorbusd starts, the file is too recent for the first rescan to
        // take (it may be half-written). The next periodic rescan is an hour away.
        let environment = ["ERRORBUSD_SYNC_RESCAN_INTERVAL": "1h", "ERRORBUSD_SYNC_SETTLE_TIME": "1s"]
        try await Self.withDaemon(environment: environment, beforeStart: { _, daemon in
            _ = try daemon.drop("left-by-the-last-run.bin", content: Self.content(3))
        }) { sandbox, daemon in
            try await DirectoryWatcher.wait(for: daemon.outbox) { $0.isEmpty }
            #expect(try await sandbox.items().keys.contains(Self.key(of: Self.content(3))))
        }
    }

    /// The next jobs are claimed while uploads run, before the claimed ones run out, so that a
    /// slot that frees finds its next job at hand instead of waiting for the store's writer. One
    /// slot: a claim that waited for a free slot would start with nothing uploading.
    @Test func theNextJobsAreClaimedWhileUploadsRun() async throws {
        try await Self.withDaemon(environment: ["ERRORBUSD_SYNC_CONCURRENCY": "1"]) { sandbox, daemon in
            for number in 0..<8 { try daemon.drop("item-\(number).bin", content: Self.content(number)) }
            try await DirectoryWatcher.wait(for: daemon.outbox) { $0.isEmpty }
            #expect(try await sandbox.items().count == 8)
            let claims = try daemon.current.standardError.text.split(separator: "\n").filter { $0.contains("claiming queued jobs") }
            #expect(claims.contains { $0.contains("uploading=1") }, "every claim waited for a free slot:\n\(claims.joined(separator: "\n"))")
        }
    }

    @Test func uploadsCutOffByTheDrainTimeoutAreToldAtStopNotAgainAtStart() async throws {
        let scratch = try ScratchDirectory("drain")
        let sandbox = try await SandboxProcess(in: scratch)
        // All five under way at once, without a slow start.
        let daemon = try DaemonProcess(
            in: scratch,
            sandbox: sandbox,
            environment: ["ERRORBUSD_SHUTDOWN_DRAIN_TIMEOUT": "200ms", "ERRORBUSD_BUS_CONCURRENCY_INITIAL": "16"]
        )
        try await daemon.start()
        // Slower than the drain timeout, quicker than the request timeout (5 s).
        try await sandbox.fault(#"{"route":"items","mode":"slow","delayMs":4000}"#)
        for number in 0..<5 { try daemon.drop("item-\(number).bin", content: Self.content(number)) }
        // One `sandbox.fault=` per request held (the word "fault" alone is in each line twice).
        #expect(await sandbox.process.standardError.wait(for: "sandbox.fault=", count: 5))
        let stopped = try await daemon.stop()
        #expect(stopped.status == 0, "\(stopped.standardError)")
        #expect(stopped.standardError.contains("5 uploads still under way when shutdown.drain-timeout (200 ms) ran out: queued again"), "\(stopped.standardError)")
        #expect(try Self.store(of: daemon).count(.queued) == 5)

        try await sandbox.clearFaults()
        try await daemon.start()
        try await DirectoryWatcher.wait(for: daemon.outbox) { $0.isEmpty }
        // Told once, at the stop: the start has nothing to say about it.
        #expect(!daemon.log.contains("queued again"), "\(daemon.log)")
        #expect(try await sandbox.items().count == 5)
        #expect(try await daemon.stop().status == 0)
        try await sandbox.stop()
    }

    @Test func anIncidentOpenAtAStopOrACrashEndsInTheHistoryAndTheLog() async throws {
        let scratch = try ScratchDirectory("incident-ends")
        let sandbox = try await SandboxProcess(in: scratch)
        let daemon = try DaemonProcess(in: scratch, sandbox: sandbox)
        try await daemon.start()
        try await sandbox.fault(#"{"route":"all","mode":"down"}"#)
        for number in 0..<3 { try daemon.drop("item-\(number).bin", content: Self.content(number)) }
        try await daemon.waitForParked(3, under: 1)

        // A stop ends it as such.
        let stopped = try await daemon.stop()
        #expect(stopped.status == 0)
        // Told with the counts it had when the bus stopped; its jobs stay parked in the store,
        // for the next start to queue again.
        #expect(stopped.standardError.contains("incident 1 still open when the bus stopped"), "\(stopped.standardError)")
        #expect(stopped.standardError.contains("0 jobs released, 0 dead-lettered ERRORBUS_"), "\(stopped.standardError)")
        // All three parked, or two while the third ran as its canary, cut off by the stop.
        #expect(
            stopped.standardError.contains("3 jobs parked under incidents, queued again at the next start")
                || (stopped.standardError.contains("2 jobs parked under incidents") && stopped.standardError.contains("1 upload still under way")),
            "\(stopped.standardError)"
        )
        var history = try Self.store(of: daemon).incidents()
        #expect(history.map(\.id) == [1])
        #expect(history.first?.resolution == "shutdown")
        #expect(history.first?.closedAt != nil)

        // A crash cannot: the next start does.
        try await daemon.start()
        try await daemon.waitForParked(3, under: 2)
        // Its history row is written before its "opened" line.
        try await daemon.waitForLog("incident 2 opened")
        #expect(try await daemon.kill().status == 128 + SIGKILL)
        try await sandbox.clearFaults()
        try await daemon.start()
        #expect(daemon.log.contains("incident 2 ended with errorbusd's last run, which ended without stopping, unresolved"), "\(daemon.log)")
        // Its jobs, parked (and one under way, if its canary was), are queued again.
        try await daemon.waitForLog("jobs released by incident 2")
        try await DirectoryWatcher.wait(for: daemon.outbox) { $0.isEmpty }
        history = try Self.store(of: daemon).incidents()
        #expect(history.map(\.resolution) == ["shutdown", "interrupted"])
        #expect(history.allSatisfy { $0.closedAt != nil && $0.state == "resolved" })
        #expect(try await sandbox.items().count == 3)
        #expect(try await daemon.stop().status == 0)
        try await sandbox.stop()
    }

    @Test func anUnreadableOutboxFileIsShownUntilItsPermissionsAreFixedAndThenTakenAtOnce() async throws {
        let scratch = try ScratchDirectory("unreadable")
        let sandbox = try await SandboxProcess(in: scratch)
        // No rescan during the test: only the permission change itself can bring the file in.
        let daemon = try DaemonProcess(in: scratch, sandbox: sandbox, environment: ["ERRORBUSD_SYNC_RESCAN_INTERVAL": "1h"])
        // As root without the capabilities that read any file, as errorbusd runs under its unit.
        let child = try daemon.launch(prefix: ["/usr/bin/setpriv", "--bounding-set=-dac_override,-dac_read_search", "--"])
        #expect(await child.waitForStandardError(containing: "errorbusd ready"), "\(child.standardError.text)")

        let hidden = daemon.outbox + "/.secret.bin.part"
        try Self.content(1).write(to: URL(fileURLWithPath: hidden))
        #expect(chown(hidden, 65534, 65534) == 0 && chmod(hidden, 0o600) == 0)
        #expect(rename(hidden, daemon.outbox + "/secret.bin") == 0)
        try await daemon.waitForLog("cannot read secret.bin in the outbox")

        let status = try ControlIntegrationTests.json(Control.Status.self, try await ControlIntegrationTests.ctl(daemon, "status", "--json"))
        #expect(status.unreadableFiles.map(\.file) == ["secret.bin"])
        #expect(status.unreadableFiles.first?.reason.contains("Permission denied") == true, "\(status.unreadableFiles)")
        let text = try await ControlIntegrationTests.ctl(daemon, "status")
        #expect(text.standardOutput.contains("1 outbox file(s) errorbusd cannot read"), "\(text.standardOutput)")
        let metrics = try await ControlIntegrationTests.ctl(daemon, "metrics")
        #expect(metrics.standardOutput.contains("errorbus_sync_unreadable_files 1"), "\(metrics.standardOutput)")

        // The fix is seen at once (inotify), not at the next rescan.
        #expect(chmod(daemon.outbox + "/secret.bin", 0o644) == 0)
        try await daemon.waitForLog("secret.bin in the outbox can be read now and is queued")
        try await DirectoryWatcher.wait(for: daemon.outbox) { $0.isEmpty }
        #expect(try await sandbox.items().count == 1)
        let after = try ControlIntegrationTests.json(Control.Status.self, try await ControlIntegrationTests.ctl(daemon, "status", "--json"))
        #expect(after.unreadableFiles.isEmpty)
        // Told once, however often it was looked at.
        #expect(daemon.log.components(separatedBy: "cannot read secret.bin").count - 1 == 1)
        #expect(try await daemon.stop().status == 0)
        try await sandbox.stop()
    }

    @Test func refusedCredentialsAreToldOnceWithTheFixThatWorksUnderSystemd() async throws {
        try await Self.withDaemon(beforeStart: { sandbox, _ in
            try await sandbox.fault(#"{"route":"token","mode":"rejectCredentials"}"#)
        }) { sandbox, daemon in
            try daemon.drop("item-0.bin", content: Self.content(0))
            try await daemon.waitForLog("needs an operator")
            // The secret came from $CREDENTIALS_DIRECTORY, a copy systemd makes at start: only a
            // restart reads a new one.
            let incident = try await ControlIntegrationTests.ctl(daemon, "incident", "1")
            #expect(incident.standardOutput.contains("then restart errorbusd (systemctl restart errorbusd)"), "\(incident.standardOutput)")
            #expect(!incident.standardOutput.contains("then reload errorbusd"), "\(incident.standardOutput)")
            // One line says the endpoint refused the client; the incident tells the rest.
            #expect(daemon.log.components(separatedBy: " error Credentials rejected: The token endpoint").count - 1 == 1, "\(daemon.log)")
        }
    }

    @Test func kill9MidUploadThenRestartDeliversEverything() async throws {
        let scratch = try ScratchDirectory("kill9")
        let sandbox = try await SandboxProcess(in: scratch)
        let daemon = try DaemonProcess(in: scratch, sandbox: sandbox)
        try await daemon.start()
        try await sandbox.fault(#"{"route":"items","mode":"slow","delayMs":500}"#)
        for number in 0..<30 { try daemon.drop("item-\(number).bin", content: Self.content(number)) }
        _ = await sandbox.process.standardError.wait(for: "request PUT items", count: 3)
        let killed = try await daemon.kill()
        #expect(killed.status == 128 + SIGKILL)

        try await sandbox.clearFaults()
        try await daemon.start()
        try await daemon.waitForLog("under way in errorbusd's last run, which ended without stopping, queued again")
        try await DirectoryWatcher.wait(for: daemon.outbox) { $0.isEmpty }
        let items = try await sandbox.items()
        #expect(items.count == 30)
        #expect(try Self.store(of: daemon).count(.delivered) == 30)
        #expect(try await daemon.stop().status == 0)
        try await sandbox.stop()
    }

    @Test func aMalformedConfigurationExits78NamingTheKey() async throws {
        let scratch = try ScratchDirectory("badconfig")
        let file = scratch.file("errorbusd.yaml")
        try "sync:\n  concurrency: sixteen\n".write(toFile: file, atomically: true, encoding: .utf8)
        // A usable secret, so that the key is the only thing wrong.
        try FileManager.default.createDirectory(atPath: scratch.file("credentials"), withIntermediateDirectories: true)
        try "s3cret".write(toFile: scratch.file("credentials/client-secret"), atomically: true, encoding: .utf8)
        var environment = ProcessInfo.processInfo.environment.filter { !$0.key.hasPrefix("ERRORBUSD_") }
        environment["CREDENTIALS_DIRECTORY"] = scratch.file("credentials")
        let finished = try await ChildProcess.run(Binaries.path("errorbusd"), ["--config", file], environment: environment)
        #expect(finished.status == 78)
        #expect(finished.standardError.contains(file))
        #expect(finished.standardError.contains("sync.concurrency"))
        #expect(!finished.standardError.contains("Fatal error"))

        let check = try await ChildProcess.run(Binaries.path("errorbusd"), ["--config", file, "--check-config"], environment: environment)
        #expect(check.status == 78)
    }

    @Test func checkConfigOutsideTheServiceFindsTheSecretTheUnitLoads() async throws {
        let scratch = try ScratchDirectory("checkconfig")
        let file = scratch.file("errorbusd.yaml")
        try "sync:\n  concurrency: 4\n".write(toFile: file, atomically: true, encoding: .utf8)
        // Run as an administrator would: no $CREDENTIALS_DIRECTORY, the secret beside the file.
        let environment = ProcessInfo.processInfo.environment.filter { !$0.key.hasPrefix("ERRORBUSD_") && $0.key != "CREDENTIALS_DIRECTORY" }
        let missing = try await ChildProcess.run(Binaries.path("errorbusd"), ["--check-config", "--config", file], environment: environment)
        #expect(missing.status == 78)
        #expect(missing.standardError.contains(scratch.file("client-secret")), "\(missing.standardError)")
        try "s3cret\n".write(toFile: scratch.file("client-secret"), atomically: true, encoding: .utf8)
        let check = try await ChildProcess.run(Binaries.path("errorbusd"), ["--check-config", "--config", file], environment: environment)
        #expect(check.status == 0, "\(check.standardError)")
        #expect(check.standardOutput.contains("client secret: \(scratch.file("client-secret"))"), "\(check.standardOutput)")
    }
}
