import ErrorBusStore
import Foundation
import Glibc
@testable import Sandbox
import TestSupport
import Testing

extension Faults {
    /// A start that meets a cause passing by itself (another process holding the state directory,
    /// a full file system) waits for it in one process, telling why, instead of failing and being
    /// started again every RestartSec= for as long as it lasts.
    @Suite(.timeLimit(.minutes(2)))
    struct Start {
        /// Holds the state directory's lock, as another errorbusd does, until `release()`.
        final class HeldLock {
            private var descriptor: CInt

            init(stateDirectory: String) throws {
                descriptor = open(stateDirectory + "/" + "errorbusd.lock", O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
                guard descriptor >= 0 else { throw TestSocketError.call("open", errno) }
                guard flock(descriptor, LOCK_EX | LOCK_NB) == 0 else { throw TestSocketError.call("flock", errno) }
            }

            func release() {
                if descriptor >= 0 { close(descriptor) }
                descriptor = -1
            }

            deinit { release() }
        }

        @Test func aStoreHeldByAnotherProcessIsWaitedForAndEveryCallToldWhy() async throws {
            let scratch = try ScratchDirectory("start-wait")
            let sandbox = try await SandboxProcess(in: scratch)
            let daemon = try DaemonProcess(in: scratch, sandbox: sandbox)
            let lock = try HeldLock(stateDirectory: daemon.stateDirectory)
            let activated = scratch.file("activated.socket")
            // errorbusd started by its control socket, as errorbusd.socket starts it: the call
            // that starts it, and every call while it waits, hear why it does not serve yet.
            let activator = try ChildProcess(
                "/usr/bin/systemd-socket-activate",
                [
                    "--listen=\(activated)", "--fdname=io.errorbus.Control",
                    "-E", "CREDENTIALS_DIRECTORY=\(daemon.environment["CREDENTIALS_DIRECTORY"] ?? "")",
                    Binaries.path("errorbusd"), "--config", daemon.configurationFile,
                ],
                environment: daemon.environment
            )
            do {
                try #require(await activator.waitForStandardError(containing: "Listening on \(activated)"), "\(activator.standardError.text)")
                for _ in 0..<2 {
                    let status = try await ChildProcess.run(Binaries.path("errorbusctl"), ["status", "--socket", activated])
                    #expect(status.status != 0)
                    #expect(status.standardError.contains("Another process holds \(daemon.stateDirectory)/errorbusd.lock"), "\(status.standardError)")
                    #expect(status.standardError.contains("errorbusd waits for it and starts once it can"), "\(status.standardError)")
                }
                // A monitor hears CRITICAL, with the reason: the host delivers nothing meanwhile.
                let health = try await ChildProcess.run(Binaries.path("errorbusctl"), ["health", "--socket", activated])
                #expect(health.status == 2, "\(health.standardOutput)")
                #expect(health.standardOutput.hasPrefix("ERRORBUSD CRITICAL - errorbusd cannot read its store: Another process holds"), "\(health.standardOutput)")
                // Told once, however many tries.
                #expect(activator.standardError.text.components(separatedBy: "errorbusd waits and tries again").count == 2, "\(activator.standardError.text)")

                lock.release()
                try #require(await activator.waitForStandardError(containing: "errorbusd ready"), "\(activator.standardError.text)")
                #expect(activator.standardError.text.contains("The store opened after"), "\(activator.standardError.text)")
                let status = try await ChildProcess.run(Binaries.path("errorbusctl"), ["status", "--socket", activated])
                #expect(status.status == 0, "\(status.standardError)")
                activator.terminate()
                let finished = await activator.waitForExit()
                #expect(finished.status == 0, "\(finished.standardError)")
            } catch {
                activator.signal(SIGKILL)
                _ = await activator.waitForExit()
                try? await sandbox.stop()
                throw error
            }
            try await sandbox.stop()
        }

        @Test func aStopWhileWaitingEndsCleanly() async throws {
            let scratch = try ScratchDirectory("start-wait-stop")
            let sandbox = try await SandboxProcess(in: scratch)
            let daemon = try DaemonProcess(in: scratch, sandbox: sandbox)
            let lock = try HeldLock(stateDirectory: daemon.stateDirectory)
            defer { lock.release() }
            do {
                try daemon.launch()
                try await daemon.waitForLog("errorbusd waits and tries again")
                let finished = try await daemon.stop()
                #expect(finished.status == 0, "\(finished.standardError)")
                #expect(finished.standardError.contains("Stopping while waiting for the store: errorbusd did not start"), "\(finished.standardError)")
            } catch {
                _ = try? await daemon.kill()
                try? await sandbox.stop()
                throw error
            }
            try await sandbox.stop()
        }

        /// A SIGHUP before the reload service traps it (here: while the start waits) is held, and
        /// reloads once errorbusd runs; its default action ended errorbusd.
        @Test func aSIGHUPWhileStartingReloadsOnceRunning() async throws {
            let scratch = try ScratchDirectory("start-wait-hup")
            let sandbox = try await SandboxProcess(in: scratch)
            let daemon = try DaemonProcess(in: scratch, sandbox: sandbox)
            let lock = try HeldLock(stateDirectory: daemon.stateDirectory)
            do {
                try daemon.launch()
                try await daemon.waitForLog("errorbusd waits and tries again")
                try daemon.signal(SIGHUP)
                lock.release()
                try await daemon.waitForLog("SIGHUP arrived while errorbusd was starting: reloading")
                try await daemon.waitForLog("configuration reloaded")
                let finished = try await daemon.stop()
                #expect(finished.status == 0, "\(finished.standardError)")
            } catch {
                _ = try? await daemon.kill()
                try? await sandbox.stop()
                throw error
            }
            try await sandbox.stop()
        }

        @Test(.enabled(if: Tmpfs.isAvailable, "mounting a tmpfs needs root"))
        func aFullStateDiskAtTheStartIsWaitedForThenDeliveryGoesOn() async throws {
            try await Tmpfs.with(size: 40 << 20) { mountPoint in
                let state = mountPoint + "/state"
                let filler = mountPoint + "/filler"
                let scratch = try ScratchDirectory("start-wait-full")
                let sandbox = try await SandboxProcess(in: scratch)
                let daemon = try DaemonProcess(in: scratch, sandbox: sandbox, environment: ["ERRORBUSD_STATE_DIRECTORY": state])
                do {
                    // A store made by a first start.
                    try await daemon.start()
                    #expect(try await daemon.stop().status == 0)

                    try Disk.fill(filler)
                    try daemon.launch()
                    try await daemon.waitForLog("errorbusd waits and tries again")
                    #expect(daemon.log.contains("is full"), "\(daemon.log)")
                    try FileManager.default.removeItem(atPath: filler)
                    try await daemon.waitForLog("errorbusd ready")
                    #expect(daemon.log.contains("The store opened after"), "\(daemon.log)")
                    try daemon.drop("after.bin", content: DaemonIntegrationTests.content(1))
                    try await DirectoryWatcher.wait(for: daemon.outbox) { $0.isEmpty }
                    #expect(try await sandbox.items().count == 1)
                    #expect(try await daemon.stop().status == 0)
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
