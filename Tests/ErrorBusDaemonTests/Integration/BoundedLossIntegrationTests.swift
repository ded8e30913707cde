import ErrorBusControl
import ErrorBusStore
import Varlink
import Foundation
import GRDB
import TestSupport
import Testing

/// What errorbusd gives up, it gives up on purpose, counts and says why: jobs older than
/// `sync.max-age`, files beyond `sync.backlog`, dead letters beyond `sync.dead-letters`; and an
/// API's own meaning of a status (`api.classify`) decides what is retried.
@Suite("Integration: bounded loss and classification", .serialized, .timeLimit(.minutes(2)))
struct BoundedLossIntegrationTests {
    typealias Daemon = DaemonIntegrationTests
    typealias Ctl = ControlIntegrationTests

    static func status(_ daemon: DaemonProcess) async throws -> Control.Status {
        try await Ctl.varlink(daemon) { try await $0.call(Control.getStatus) }
    }

    static func metrics(_ daemon: DaemonProcess) async throws -> String {
        try await Ctl.varlink(daemon) { try await $0.call(Control.getMetrics) }.text
    }

    /// The exposition once `counted` holds of it, read again a bounded number of times. A
    /// counter is raised after the log line or the file a test waits for: a moment after it, or
    /// after the awaits that follow (the last dead letter's recording, say). An exposition read
    /// at once may come before it. The caller checks the exposition returned.
    static func metrics(_ daemon: DaemonProcess, once counted: (String) -> Bool) async throws -> String {
        var text = try await metrics(daemon)
        for _ in 0..<200 where !counted(text) {
            text = try await metrics(daemon)
        }
        return text
    }

    /// How many times `needle` is in `text`.
    static func occurrences(of needle: String, in text: String) -> Int {
        text.components(separatedBy: needle).count - 1
    }

    @Test func aJobOlderThanMaxAgeIsSetAsideWithTheReasonNotUploaded() async throws {
        try await Daemon.withDaemon(environment: ["ERRORBUSD_SYNC_MAX_AGE": "1s"]) { sandbox, daemon in
            try await sandbox.fault(#"{"route":"all","mode":"down"}"#)
            for number in 0..<2 { try daemon.drop("old-\(number).bin", content: Daemon.content(number)) }
            // The outage outlasts the age: each job's next attempt sets it aside, without a request.
            try await daemon.waitForLog("set aside as a dead letter: Older than 1s", count: 2)
            try await sandbox.clearFaults()
            let dead = try Daemon.store(of: daemon).jobs(.deadLettered)
            #expect(dead.count == 2)
            #expect(dead.allSatisfy { $0.reason?.contains("longer than sync.max-age (1s) allows") == true }, "\(dead.map(\.reason))")
            #expect(try await sandbox.items().isEmpty)
            #expect(try await Self.metrics(daemon).contains("errorbus_sync_expired_files_total 2"))
            // The files stay for an operator, as every dead letter's.
            #expect(try daemon.outboxFiles().count == 2)
        }
    }

    @Test func aFullBacklogLeavesNewFilesInTheOutboxUntilThereIsRoom() async throws {
        try await Daemon.withDaemon(environment: ["ERRORBUSD_SYNC_BACKLOG_MAX_FILES": "3"]) { sandbox, daemon in
            try await Ctl.outage(sandbox, daemon, count: 3)
            for number in 3..<6 {
                try daemon.drop("item-\(number).bin", content: Daemon.content(number))
                try await daemon.waitForLog("left in the outbox for want of room in the backlog", count: number - 2)
            }
            // Left out unseen too while there is no room, and no file to take once there is.
            try FileManager.default.createDirectory(atPath: daemon.outbox + "/archive.d", withIntermediateDirectories: false)
            try await daemon.waitForLog("left in the outbox for want of room in the backlog", count: 4)
            let status = try await Self.status(daemon)
            #expect(status.backlog.files == 3 && status.backlog.maxFiles == 3 && status.backlog.overflow == "reject-new")
            #expect(status.backlog.rejectedFiles == 4)
            #expect(try daemon.outboxFiles().count == 7)
            // Counted just after the line the test waited for was logged.
            let rejectedLine = #"errorbus_sync_overflow_files_total{policy="reject_new"} 4"#
            #expect(try await Self.metrics(daemon, once: { $0.contains(rejectedLine) }).contains(rejectedLine))
            // Told once, not once per file.
            #expect(Self.occurrences(of: "The backlog is over sync.backlog.max-files (3)", in: daemon.log) == 1)

            // Once the API is back, deliveries make room and the files left out are taken.
            let back = Date()
            try await sandbox.clearFaults()
            try await DirectoryWatcher.wait(for: daemon.outbox) { $0 == ["archive.d"] }
            #expect(try await sandbox.items().count == 6)
            // A file left out arrived when it was left out, not when it was taken at last.
            let waited = try #require(try Daemon.store(of: daemon).jobs(.delivered).first { $0.fileName == "item-5.bin" })
            #expect(Double(waited.createdAt) / 1000 < back.timeIntervalSince1970)
            try await daemon.waitForLog("The backlog is under its limits again: 4 files were left in the outbox for a while, none waits now")
            #expect(try await Self.status(daemon).backlog.rejectedFiles == 0)
        }
    }

    @Test func aRestartWithAFullBacklogCountsOnlyTheNewFilesAsLeftOut() async throws {
        try await Daemon.withDaemon(environment: ["ERRORBUSD_SYNC_BACKLOG_MAX_FILES": "3"]) { sandbox, daemon in
            try await Ctl.outage(sandbox, daemon, count: 3)
            let stopped = try await daemon.stop()
            #expect(stopped.status == 0)
            // Arrives while errorbusd is stopped: the start finds the three jobs' files and it.
            try daemon.drop("item-3.bin", content: Daemon.content(3))
            try await daemon.start()
            try await daemon.waitForLog("left in the outbox for want of room in the backlog")
            #expect(daemon.log.contains("1 new outbox file(s) left in the outbox for want of room in the backlog (1 wait)"), "\(daemon.log)")
            #expect(try await Self.status(daemon).backlog.rejectedFiles == 1)
        }
    }

    @Test func dropOldestSetsAsideTheOldestWaitingFilesToMakeRoom() async throws {
        let environment = ["ERRORBUSD_SYNC_BACKLOG_MAX_FILES": "3", "ERRORBUSD_SYNC_BACKLOG_OVERFLOW": "drop-oldest"]
        try await Daemon.withDaemon(environment: environment) { sandbox, daemon in
            try await Ctl.outage(sandbox, daemon, count: 3)
            for number in 3..<6 {
                try daemon.drop("item-\(number).bin", content: Daemon.content(number))
                try await daemon.waitForLog("set aside as a dead letter: Dropped to make room: ", count: number - 2)
            }
            let dead = try Daemon.store(of: daemon).jobs(.deadLettered)
            #expect(dead.count == 3)
            #expect(dead.allSatisfy { $0.reason?.contains("the backlog was over sync.backlog.max-files (3)") == true })
            // The oldest go: of the first four, those not running as the incident's canary; never
            // the two newest.
            let names = Set(dead.map(\.fileName))
            #expect(names.isSubset(of: ["item-0.bin", "item-1.bin", "item-2.bin", "item-3.bin"]), "\(names)")
            // Both counters are raised once room is made, after the last dead letter was recorded
            // and told; the dead letters' last.
            let overflowDeadLetters = { (metrics: String) in
                metrics.split(separator: "\n").contains { $0.hasPrefix("errorbus_jobs_dead_lettered_total{") && $0.contains(#"category="overflow""#) && $0.hasSuffix(" 3") }
            }
            let metrics = try await Self.metrics(daemon, once: overflowDeadLetters)
            #expect(metrics.contains(#"errorbus_sync_overflow_files_total{policy="drop_oldest"} 3"#))
            // Dead letters as any other, their cause the backlog's limit.
            #expect(overflowDeadLetters(metrics), "\(metrics)")
            #expect(Self.occurrences(of: "The backlog is over sync.backlog.max-files (3)", in: daemon.log) == 1)

            try await sandbox.clearFaults()
            try await DirectoryWatcher.wait(for: daemon.outbox) { $0.count == 3 }
            #expect(try await sandbox.items().count == 3)
            #expect(Set(try daemon.outboxFiles()) == names)
        }
    }

    @Test func deadLettersBeyondTheRetentionAreGivenUpOldestFirstWithTheirFiles() async throws {
        try await Daemon.withDaemon(environment: ["ERRORBUSD_SYNC_DEAD_LETTERS_MAX_COUNT": "2"]) { sandbox, daemon in
            try await sandbox.fault(#"{"route":"items","mode":"invalid","detail":"field 'customer' is required"}"#)
            for number in 0..<5 {
                try daemon.drop("bad-\(number).bin", content: Daemon.content(number))
                try await daemon.waitForLog("set aside as a dead letter: ", count: number + 1)
            }
            // The dead-letter table is full at two: the three set aside first are given up.
            try await DirectoryWatcher.wait(for: daemon.outbox) { $0 == ["bad-3.bin", "bad-4.bin"] }
            let store = try Daemon.store(of: daemon)
            #expect(try store.jobs(.deadLettered).map(\.fileName) == ["bad-3.bin", "bad-4.bin"])
            let pruned = try store.jobs(.discarded)
            #expect(pruned.map(\.fileName) == ["bad-0.bin", "bad-1.bin", "bad-2.bin"])
            #expect(pruned.allSatisfy { $0.reason?.contains("more than sync.dead-letters.max-count (2)") == true })
            // Counted just after the files were removed.
            let prunedLine = #"errorbus_sync_dead_letters_pruned_total{limit="max_count"} 3"#
            #expect(try await Self.metrics(daemon, once: { $0.contains(prunedLine) }).contains(prunedLine))
            // Told once a minute at most, not once per dead letter given up: after the files went
            // and were counted, so waited for first.
            try await daemon.waitForLog("Dead letters given up, oldest first, their files removed")
            #expect(Self.occurrences(of: "Dead letters given up, oldest first, their files removed", in: daemon.log) == 1)
            // The health check counts the two kept, which wait for an operator, as errorbus_jobs
            // does; not the three given up.
            let health = try await Ctl.ctl(daemon, "health")
            #expect(health.standardOutput.contains("2 dead letters wait for an operator"), "\(health.standardOutput)")
        }
    }

    @Test func deliveredJobsAreForgottenAfterTheRetentionDiscardedOnesKept() async throws {
        try await Daemon.withDaemon { sandbox, daemon in
            for number in 0..<3 { try daemon.drop("item-\(number).bin", content: Daemon.content(number)) }
            try await DirectoryWatcher.wait(for: daemon.outbox) { $0.isEmpty }
            // A dead letter an operator discards: its file stays in the outbox, never to be sent.
            try await sandbox.fault(#"{"route":"items","mode":"invalid","detail":"no"}"#)
            try daemon.drop("bad.bin", content: Daemon.content(9))
            try await daemon.waitForLog("set aside as a dead letter: ")
            #expect(try await Ctl.ctl(daemon, "discard", "--dead-letters").status == 0)
            try await sandbox.clearFaults()
            #expect(try await daemon.stop().status == 0)
            // Thirty-one days pass for every job, as far as the store can tell.
            let database = try DatabaseQueue(path: daemon.stateDirectory + "/" + JobStore.databaseFileName)
            try await database.write { db in
                try db.execute(sql: "UPDATE job SET updatedAt = updatedAt - ?", arguments: [Int64(31 * 86_400_000)])
            }
            try database.close()
            // And for the file left in the outbox: it is the discarded one, not written since.
            let bad = daemon.outbox + "/bad.bin"
            let written = try #require(try FileManager.default.attributesOfItem(atPath: bad)[.modificationDate] as? Date)
            try FileManager.default.setAttributes([.modificationDate: written.addingTimeInterval(-31 * 86_400)], ofItemAtPath: bad)
            // The start's first pass forgets the delivered ones (sync.delivered-retention: 30d by
            // default) and keeps the discarded one, the record that keeps bad.bin from being sent.
            try await daemon.start()
            try await daemon.waitForLog("3 delivered jobs forgotten: delivered more than sync.delivered-retention (30d) ago")
            let store = try Daemon.store(of: daemon)
            #expect(try store.count(.delivered) == 0)
            #expect(try store.jobs(.discarded).map(\.fileName) == ["bad.bin"])
            #expect(try daemon.outboxFiles() == ["bad.bin"])
        }
    }

    @Test func anOverrideMakesAnAPIsPermanentLookingAnswerTransient() async throws {
        // The sandbox's injected faults carry this problem type.
        let rule = "403 urn:errorbus:sandbox:injected-fault=transient"
        let fault = #"{"route":"items","mode":"status","status":403,"for":1}"#
        // Without the rule, 403 is permanent: a dead letter.
        try await Daemon.withDaemon { sandbox, daemon in
            try await sandbox.fault(fault)
            try daemon.drop("item-0.bin", content: Daemon.content(0))
            try await daemon.waitForLog("set aside as a dead letter: ")
            #expect(try await sandbox.items().isEmpty)
        }
        // With it, the same answer is retried until the API takes the file.
        try await Daemon.withDaemon(environment: ["ERRORBUSD_API_CLASSIFY": rule]) { sandbox, daemon in
            #expect(try await Self.status(daemon).classify == [rule])
            try await sandbox.fault(fault)
            try daemon.drop("item-0.bin", content: Daemon.content(0))
            try await DirectoryWatcher.wait(for: daemon.outbox) { $0.isEmpty }
            #expect(try await sandbox.items().count == 1)
            #expect(try Daemon.store(of: daemon).count(.deadLettered) == 0)
            #expect(daemon.log.contains("Classified transient by api.classify (\(rule))"))
            let shown = try await Ctl.ctl(daemon, "status")
            #expect(shown.standardOutput.contains("api.classify: \(rule)"))
        }
    }
}
