import Foundation
import ErrorBusStore
@testable import Sandbox
import TestSupport
import Testing

/// errorbusd against an API with a capacity: beyond it, the sandbox sheds with `503` and
/// `Retry-After`, and errorbusd's adaptive concurrency must back off instead of sending what the
/// API cannot take, round after round.
@Suite(.serialized, .timeLimit(.minutes(2)))
struct CapacityIntegrationTests {
    /// What one daemon's run against the limited API came to.
    struct Run {
        var shed: Int
        var stored: Int
        var left: Int
    }

    /// 30 files to an API that serves 3 uploads at once, 100 ms each, and queues none.
    static func upload(environment: [String: String]) async throws -> Run {
        let scratch = try ScratchDirectory("capacity")
        let sandbox = try await SandboxProcess(in: scratch)
        let daemon = try DaemonProcess(in: scratch, sandbox: sandbox, environment: environment)
        do {
            try await sandbox.capacity(#"{"concurrency":3,"queue":0,"serviceMs":100,"retryAfter":1}"#)
            try await daemon.start()
            for number in 0..<30 {
                try daemon.drop("item-\(number).bin", content: DaemonIntegrationTests.content(number))
            }
            try await DirectoryWatcher.wait(for: daemon.outbox) { $0.isEmpty }
            let stats = try await sandbox.stats()
            let run = Run(
                shed: stats.requests.byRoute["items"]?["503"] ?? 0,
                stored: try await sandbox.items().count,
                left: try DaemonIntegrationTests.store(of: daemon).count(.inFlight)
            )
            let finished = try await daemon.stop()
            #expect(finished.status == 0, "errorbusd exited with \(finished.status):\n\(finished.standardError)")
            try await sandbox.stop()
            return run
        } catch {
            _ = try? await daemon.kill()
            try? await sandbox.stop()
            throw error
        }
    }

    @Test func aSheddingAPIMakesErrorbusdBackOffWhereAFixedConcurrencyKeepsOverrunningIt() async throws {
        // The same daemon with its concurrency fixed at 16 and no rate learnt: every release after
        // a Retry-After sends 16 at once, and 13 of them are shed, round after round.
        let fixed = try await Self.upload(environment: [
            "ERRORBUSD_BUS_CONCURRENCY_INITIAL": "16", "ERRORBUSD_BUS_CONCURRENCY_DECREASE": "1", "ERRORBUSD_BUS_PACING_RATE": "off",
        ])
        let adaptive = try await Self.upload(environment: [:])
        // Both deliver everything: shedding loses nothing.
        #expect(fixed.stored == 30 && fixed.left == 0)
        #expect(adaptive.stored == 30 && adaptive.left == 0)
        // The adaptive daemon is shed a fraction of what a fixed concurrency is (measured: 1
        // against 31-38).
        #expect(fixed.shed >= 20, "the fixed daemon was shed \(fixed.shed) times")
        #expect(adaptive.shed * 3 <= fixed.shed, "shed: adaptive \(adaptive.shed), fixed \(fixed.shed)")
    }
}
