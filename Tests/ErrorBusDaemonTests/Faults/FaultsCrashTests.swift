import ErrorBusDaemon
import Foundation
import Glibc
@testable import Sandbox
import TestSupport
import Testing

extension Faults {
    /// `kill -9` at twenty seeded random moments of an outage and its recovery, errorbusd started
    /// again after each: every file arrives once (duplicates only as absorbed replays of the same
    /// idempotency key), the outbox ends empty and the database is sound.
    @Suite(.timeLimit(.minutes(3)))
    struct Crash {
        static let kills = 20
        static let filesPerRound = 5
        /// Rounds under the outage; the fault is removed before the next.
        static let outageRounds = 8

        @Test func twentyKillsDuringAnOutageAndItsRecoveryLoseAndDuplicateNothing() async throws {
            var generator = SeededGenerator(seed: Faults.seed(for: "kill -9 during an outage"))
            let scratch = try ScratchDirectory("faults-kill9")
            let sandbox = try await SandboxProcess(in: scratch)
            let daemon = try DaemonProcess(in: scratch, sandbox: sandbox)
            do {
                try await sandbox.fault(#"{"route":"all","mode":"down"}"#)
                var dropped = 0
                var moments: [Int] = []
                for round in 0..<Self.kills {
                    if round == Self.outageRounds {
                        // Recovery, with answers a little late: the API has taken an upload
                        // before errorbusd hears so, and a kill lands in between.
                        try await sandbox.clearFaults()
                        try await sandbox.fault(#"{"route":"items","mode":"slow","delayMs":100}"#)
                    }
                    try await daemon.start()
                    for _ in 0..<Self.filesPerRound {
                        try daemon.drop("item-\(dropped).bin", content: DaemonIntegrationTests.content(dropped))
                        dropped += 1
                    }
                    // The random moment itself: how long errorbusd runs after it said ready
                    // (queueing, parking, probing, releasing, uploading, recording). No
                    // assertion depends on it; it only picks where the kill lands.
                    let moment = Int.random(in: 0...400, using: &generator)
                    moments.append(moment)
                    try await Task.sleep(for: .milliseconds(moment))
                    let killed = try await daemon.kill()
                    #expect(killed.status == 128 + SIGKILL, "round \(round): errorbusd exited \(killed.status) before the kill:\n\(killed.standardError)")
                }
                print("kill -9 moments (ms after ready): \(moments)")

                // The last start, left to finish.
                try await sandbox.clearFaults()
                try await daemon.start()
                try await DirectoryWatcher.wait(for: daemon.outbox) { $0.isEmpty }
                let items = try await sandbox.items()
                let expected = Set((0..<dropped).map { DaemonIntegrationTests.key(of: DaemonIntegrationTests.content($0)) })
                #expect(Set(items.keys) == expected)
                let stats = try await sandbox.stats()
                #expect(stats.items.distinct == dropped)
                #expect(stats.items.keysReused == 0)
                #expect(stats.items.uploads == dropped)
                print("kill -9: \(dropped) files, \(stats.items.duplicatesAbsorbed) replays absorbed by their idempotency key")
                try await Faults.expectCleanStop(daemon, delivered: dropped)
            } catch {
                _ = try? await daemon.kill()
                try? await sandbox.stop()
                throw error
            }
            try await sandbox.stop()
        }
    }
}
