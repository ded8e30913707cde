import Foundation
@testable import Sandbox
import TestSupport
import Testing

/// A server (or a balancer in front of it) that resets every upload past 2 MiB, as one that caps
/// or times out big bodies does, while it serves small ones: the big file's retries wait at least
/// as long as each cut run took, doubled each time, so it never takes more than half the link
/// (here `sync.bandwidth` 1 MiB/s: each cut run is 2 s of it), and it is set aside and given up as
/// a bad file is; the small files go all the while.
@Suite("Integration: a server that cuts big uploads half way", .serialized, .timeLimit(.minutes(3)))
struct CutUploadsIntegrationTests {
    typealias Daemon = DaemonIntegrationTests

    @Test func aFileCutHalfWayIsRetriedAfterAsLongAsItsRunsTookDoubledAndGivenUp() async throws {
        let environment = [
            "ERRORBUSD_SYNC_BANDWIDTH": "1MiB/s",
            // Told apart after a few failures, given up after two on its own.
            "ERRORBUSD_BUS_ISOLATION_EVIDENCE": "2",
            "ERRORBUSD_BUS_ISOLATION_MAX_ATTEMPTS": "2",
        ]
        try await Daemon.withDaemon(environment: environment) { sandbox, daemon in
            try await sandbox.fault(#"{"route":"items","mode":"down","bytes":2097152}"#)
            try daemon.drop("big.bin", content: Data(repeating: 0xB1, count: 8 << 20))
            // Small files keep arriving, one a second, and are delivered beside it.
            let arrivals = Task {
                for number in 0..<600 where !Task.isCancelled {
                    try daemon.drop("item-\(number).bin", content: Daemon.content(number))
                    try await Task.sleep(for: .seconds(1))
                }
            }
            defer { arrivals.cancel() }
            try await daemon.waitForLog("big.bin set aside as a dead letter")
            arrivals.cancel()

            let stats = try await sandbox.stats()
            #expect(stats.requests.byRoute["items"]?["201"] ?? 0 > 0, "the small files went")
            // A cut run is told once, as a reset (not also as the 500 its handler never sent).
            #expect(stats.requests.byRoute["items"]?["500"] == nil, "\(stats.requests.byRoute)")
            // When each cut run ended, by the second (one reading of the sandbox's own tally).
            let cut = (stats.perSecond ?? []).filter { $0.route == "items" && $0.outcome == "reset" }.flatMap { Array(repeating: $0.second, count: $0.count) }.sorted()
            print("cut uploads: big.bin's runs were cut at seconds \(cut), \(cut.count) runs of 2 MiB for an 8 MiB file")
            #expect(cut.count >= 3, "\(cut)")
            // Each run takes 2 s at 1 MiB/s: after the n-th cut, at least 2 s × 2^(n-1) of waiting,
            // then 2 s of the next run (less a second for the tally's granularity).
            for (index, (earlier, later)) in zip(cut, cut.dropFirst()).enumerated() {
                let least = 2 * (1 << min(index, 5)) + 2 - 1
                #expect(later - earlier >= least, "run \(index + 2) was cut \(later - earlier) s after run \(index + 1), before its cost had passed: \(cut)")
            }
        }
    }
}
