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
    }
}
