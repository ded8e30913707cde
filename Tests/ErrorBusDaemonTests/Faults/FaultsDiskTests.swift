import ErrorBusControl
import ErrorBusDaemon
import ErrorBusStore
import Foundation
import Glibc
import GRDB
@testable import Sandbox
import TestSupport
import Testing
import Varlink

extension Faults {
    /// errorbusd's state directory on a small tmpfs that the test fills up.
    @Suite(.enabled(if: Tmpfs.isAvailable, "mounting a tmpfs needs root"), .timeLimit(.minutes(2)))
    struct Disk {
        /// Writes zeros to `path` until the file system has no block left.
        static func fill(_ path: String) throws {
            let descriptor = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
            guard descriptor >= 0 else { throw TestSocketError.call("open(\(path))", errno) }
            defer { close(descriptor) }
            let chunk = [UInt8](repeating: 0, count: 64 << 10)
            for size in [64 << 10, 4 << 10, 512, 1] {
                while true {
                    let written = chunk.withUnsafeBytes { write(descriptor, $0.baseAddress, size) }
                    if written > 0 { continue }
                    guard errno == ENOSPC else { throw TestSocketError.call("write(\(path))", errno) }
                    break
                }
            }
        }

        /// Checkpoints the daemon's WAL into the database and truncates it to nothing, from a
        /// connection of the test's (SQLite allows it beside the daemon's).
        static func truncateWAL(_ state: String) throws {
            var configuration = GRDB.Configuration()
            configuration.busyMode = .timeout(10)
            let queue = try DatabaseQueue(path: state + "/" + JobStore.databaseFileName, configuration: configuration)
            let busy = try queue.writeWithoutTransaction { try Int.fetchOne($0, sql: "PRAGMA wal_checkpoint(TRUNCATE)") }
            #expect(busy == 0)
            try queue.close()
        }

        @Test func aFullStateDiskPausesSyncAsFatalLosesNothingAndRecoversWhenSpaceReturns() async throws {
            // Above the 16 MiB the sync's local check wants free before it resumes.
            try await Tmpfs.with(size: 40 << 20) { mountPoint in
                let state = mountPoint + "/state"
                let filler = mountPoint + "/filler"
                let scratch = try ScratchDirectory("faults-disk")
                let sandbox = try await SandboxProcess(in: scratch)
                let daemon = try DaemonProcess(in: scratch, sandbox: sandbox, environment: ["ERRORBUSD_STATE_DIRECTORY": state])
                do {
                    try await daemon.start()
                    for number in 0..<3 { try daemon.drop("before-\(number).bin", content: DaemonIntegrationTests.content(number)) }
                    try await DirectoryWatcher.wait(for: daemon.outbox) { $0.isEmpty }

                    // Uploads under way when the disk fills: the API takes them, the store cannot
                    // record it. (The WAL is emptied first, so that no room is left in it.)
                    try await sandbox.fault(#"{"route":"items","mode":"slow","delayMs":2000,"trickle":true}"#)
                    let before = 8
                    for number in 3..<before { try daemon.drop("in-flight-\(number).bin", content: DaemonIntegrationTests.content(number)) }
                    _ = await sandbox.process.standardError.wait(for: "request PUT items", count: before)
                    try Self.truncateWAL(state)
                    try Self.fill(filler)
                    try await sandbox.clearFaults()
                    // And files that arrive while it is full.
                    let total = 208
                    for number in before..<total { try daemon.drop("full-\(number).bin", content: DaemonIntegrationTests.content(number)) }
                    try await daemon.waitForLog("opened: State disk full")
                    let opened = try #require(daemon.log.split(separator: "\n").first { $0.contains("opened: State disk full") })
                    #expect(opened.contains("ERRORBUS_CATEGORY=fatal"), "\(opened)")
                    #expect(opened.contains(state), "\(opened)")
                    let status = try await ControlIntegrationTests.varlink(daemon) { try await $0.call(Control.getStatus) }
                    let incident = try #require(status.incidents.first { $0.category == .fatal })
                    #expect(incident.service == "sync")
                    #expect(incident.cause == "diskFull")
                    #expect(status.services.first { $0.name == "sync" }?.state != .running)

                    try await daemon.waitForLog("as delivered: ", count: before - 3)
                    // Nothing lost meanwhile: each file is still in the outbox or at the API.
                    let stored = Set(try await sandbox.items().keys)
                    let waiting = try daemon.outboxFiles()
                    let waitingKeys = Set(try waiting.map { DaemonIntegrationTests.key(of: try Data(contentsOf: URL(fileURLWithPath: daemon.outbox + "/" + $0))) })
                    let expected = Set((0..<total).map { DaemonIntegrationTests.key(of: DaemonIntegrationTests.content($0)) })
                    #expect(stored.union(waitingKeys) == expected)
                    #expect(!waiting.isEmpty)

                    // Room again: the local check passes at its next probe and sync resumes.
                    try FileManager.default.removeItem(atPath: filler)
                    try await daemon.waitForLog("incident \(incident.id) recovered")
                    try await DirectoryWatcher.wait(for: daemon.outbox) { $0.isEmpty }
                    #expect(Set(try await sandbox.items().keys) == expected)
                    #expect(try await sandbox.stats().items.keysReused == 0)
                    let after = try await ControlIntegrationTests.varlink(daemon) { try await $0.call(Control.getStatus) }
                    #expect(after.incidents.isEmpty)
                    #expect(after.services.first { $0.name == "sync" }?.state == .running)
                    try await Faults.expectCleanStop(daemon, stateDirectory: state, delivered: total)
                } catch {
                    _ = try? await daemon.kill()
                    try? await sandbox.stop()
                    throw error
                }
                try await sandbox.stop()
            }
        }

        /// The value of an unlabelled family in an exposition.
        static func value(_ name: String, in exposition: String) -> Double? {
            exposition.split(separator: "\n").first { $0.hasPrefix(name + " ") }.flatMap { Double($0.split(separator: " ")[1]) }
        }

        /// Files that arrive while the state disk is full cannot be queued: they wait in the outbox
        /// unknown to the store, and are counted as waiting (the backlog's gauges, health, the
        /// status, errorbus_sync_unqueued_files) until they are queued, not invisible.
        @Test func filesTheFullStoreCannotQueueAreCountedUntilTheyAre() async throws {
            try await Tmpfs.with(size: 24 << 20) { mountPoint in
                let state = mountPoint + "/state"
                let scratch = try ScratchDirectory("faults-disk-unqueued")
                let sandbox = try await SandboxProcess(in: scratch)
                let daemon = try DaemonProcess(in: scratch, sandbox: sandbox, environment: [
                    "ERRORBUSD_STATE_DIRECTORY": state,
                    "ERRORBUSD_STATE_MIN_FREE_SPACE": "4MiB",
                    // No probe of its own while the test looks: only the operator's retry checks.
                    "ERRORBUSD_BUS_REACHABILITY_INITIAL_INTERVAL": "1h",
                    "ERRORBUSD_BUS_REACHABILITY_MAXIMUM_INTERVAL": "1h",
                    "ERRORBUSD_BUS_REACHABILITY_LOCAL_MAXIMUM_INTERVAL": "1h",
                ])
                do {
                    try await daemon.start()
                    try Self.truncateWAL(state)
                    try Self.fill(mountPoint + "/filler")
                    let total = 7
                    var bytes = 0
                    for number in 0..<total {
                        let content = DaemonIntegrationTests.content(number)
                        bytes += content.count
                        try daemon.drop("full-\(number).bin", content: content)
                    }
                    try await daemon.waitForLog("opened: State disk full")
                    try await daemon.waitForLog("\(total) outbox files could not be queued")

                    let status = try await ControlIntegrationTests.varlink(daemon) { try await $0.call(Control.getStatus) }
                    let incident = try #require(status.incidents.first { $0.cause == "diskFull" })
                    #expect(status.backlog.files == 0)
                    #expect(status.backlog.unqueuedFiles == total)
                    #expect(status.backlog.unqueuedBytes == bytes)
                    #expect(status.backlog.oldestUnqueuedAt != nil)
                    let reason = try #require(status.backlog.unqueuedReason)
                    #expect(reason.contains("full"), "\(reason)")
                    let notDelivering = try #require(status.health.checks.first { $0.name == "not-delivering" })
                    #expect(notDelivering.text.hasSuffix("while \(total) files wait"), "\(notDelivering.text)")
                    let oldestJob = try #require(status.health.checks.first { $0.name == "oldest-job" })
                    #expect(oldestJob.text.hasPrefix("oldest job waiting "), "\(oldestJob.text)")

                    let shown = try await ControlIntegrationTests.ctl(daemon, "status")
                    #expect(shown.standardOutput.contains("\(total) files could not be queued: \(reason)"), "\(shown.standardOutput)")
                    let metrics = try await ControlIntegrationTests.ctl(daemon, "metrics").standardOutput
                    #expect(Self.value("errorbus_sync_unqueued_files", in: metrics) == Double(total), "\(metrics)")
                    #expect(Self.value("errorbus_sync_backlog_files", in: metrics) == Double(total))
                    #expect(Self.value("errorbus_sync_backlog_bytes", in: metrics) == Double(bytes))
                    #expect((Self.value("errorbus_sync_backlog_oldest_age_seconds", in: metrics) ?? 0) > 0)

                    // Room again: the operator's retry resumes sync, the files are queued and
                    // delivered, and none is counted unqueued any more.
                    try FileManager.default.removeItem(atPath: mountPoint + "/filler")
                    #expect(try await ControlIntegrationTests.ctl(daemon, "retry", "\(incident.id)").status == 0)
                    try await daemon.waitForLog("incident \(incident.id) recovered")
                    try await DirectoryWatcher.wait(for: daemon.outbox) { $0.isEmpty }
                    let after = try await ControlIntegrationTests.varlink(daemon) { try await $0.call(Control.getStatus) }
                    #expect(after.backlog.unqueuedFiles == nil)
                    #expect(after.backlog.unqueuedReason == nil)
                    let cleared = try await ControlIntegrationTests.ctl(daemon, "metrics").standardOutput
                    #expect(Self.value("errorbus_sync_unqueued_files", in: cleared) == 0, "\(cleared)")
                    try await Faults.expectCleanStop(daemon, stateDirectory: state, delivered: total)
                } catch {
                    _ = try? await daemon.kill()
                    try? await sandbox.stop()
                    throw error
                }
                try await sandbox.stop()
            }
        }

        /// A full disk is one incident, however many files meet it; it says what it waits for
        /// (state.min-free-space), an operator's retry checks again at once, and it resumes as
        /// soon as the room is there, not at some larger hidden margin.
        @Test func aFullDiskIsToldOnceAndResumesAtStateMinFreeSpaceWhenRetried() async throws {
            try await Tmpfs.with(size: 24 << 20) { mountPoint in
                let state = mountPoint + "/state"
                let scratch = try ScratchDirectory("faults-disk-floor")
                let sandbox = try await SandboxProcess(in: scratch)
                let daemon = try DaemonProcess(in: scratch, sandbox: sandbox, environment: [
                    "ERRORBUSD_STATE_DIRECTORY": state,
                    "ERRORBUSD_STATE_MIN_FREE_SPACE": "4MiB",
                    // No probe of its own while the test looks: only the operator's retry checks.
                    "ERRORBUSD_BUS_REACHABILITY_INITIAL_INTERVAL": "1h",
                    "ERRORBUSD_BUS_REACHABILITY_MAXIMUM_INTERVAL": "1h",
                    "ERRORBUSD_BUS_REACHABILITY_LOCAL_MAXIMUM_INTERVAL": "1h",
                ])
                do {
                    try await daemon.start()
                    try Self.truncateWAL(state)
                    // 2 MiB that will be given back first, then everything else.
                    try Data(count: 2 << 20).write(to: URL(fileURLWithPath: mountPoint + "/filler-small"))
                    try Self.fill(mountPoint + "/filler")
                    let total = 30
                    for number in 0..<total { try daemon.drop("full-\(number).bin", content: DaemonIntegrationTests.content(number)) }
                    try await daemon.waitForLog("opened: State disk full")
                    let status = try await ControlIntegrationTests.varlink(daemon) { try await $0.call(Control.getStatus) }
                    let incident = try #require(status.incidents.first { $0.cause == "diskFull" })
                    #expect(incident.next?.contains("4MiB free (state.min-free-space)") == true, "\(incident)")

                    // 2 MiB free, under the floor: the retry checks at once and says why it waits.
                    let watcher = try ChildProcess(Binaries.path("errorbusctl"), ["watch", "--json", "--socket", daemon.controlSocket])
                    defer { watcher.terminate() }
                    #expect(await watcher.waitForStandardOutput(containing: #""kind":"synchronized""#))
                    try FileManager.default.removeItem(atPath: mountPoint + "/filler-small")
                    #expect(try await ControlIntegrationTests.ctl(daemon, "retry", "\(incident.id)").status == 0)
                    #expect(await watcher.waitForStandardOutput(containing: #""kind":"probeFailed""#))
                    let checked = try await ControlIntegrationTests.varlink(daemon) { try await $0.call(Control.getIncident, .init(id: incident.id)) }
                    #expect(checked.incident.lastCheck?.contains("less than state.min-free-space (4MiB)") == true, "\(checked.incident)")
                    #expect(checked.incident.resolution == nil)

                    // Room at the floor: the retry resumes sync, and every file goes.
                    try FileManager.default.removeItem(atPath: mountPoint + "/filler")
                    #expect(try await ControlIntegrationTests.ctl(daemon, "retry", "\(incident.id)").status == 0)
                    try await daemon.waitForLog("incident \(incident.id) recovered")
                    try await DirectoryWatcher.wait(for: daemon.outbox) { $0.isEmpty }
                    let expected = Set((0..<total).map { DaemonIntegrationTests.key(of: DaemonIntegrationTests.content($0)) })
                    #expect(Set(try await sandbox.items().keys) == expected)

                    // Told once: one incident line, no error line per file.
                    let lines = daemon.log.split(separator: "\n")
                    #expect(lines.count { $0.contains("opened: State disk full") } == 1)
                    let errors = lines.filter { $0.contains(" error errorbusd:") && $0.contains("cannot queue") }
                    #expect(errors.isEmpty, "\(errors)")
                    try await Faults.expectCleanStop(daemon, stateDirectory: state, delivered: total)
                } catch {
                    _ = try? await daemon.kill()
                    try? await sandbox.stop()
                    throw error
                }
                try await sandbox.stop()
            }
        }
    }
}
