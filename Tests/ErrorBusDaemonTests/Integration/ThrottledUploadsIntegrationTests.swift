import ErrorBusControl
import Foundation
@testable import Sandbox
import TestSupport
import Testing

/// `sync.bandwidth` paces upload bodies and nothing else: while a big upload takes the whole
/// limit, an incident's probe is answered, not queued behind the upload; and the upload, on its
/// way for seconds, does not keep the scope's other uploads waiting for its slot.
@Suite("Integration: a probe while uploads are throttled", .serialized, .timeLimit(.minutes(3)))
struct ThrottledUploadsIntegrationTests {
    typealias Daemon = DaemonIntegrationTests

    @Test func aProbeIsAnsweredWhileAThrottledUploadTakesTheWholeLimit() async throws {
        try await Daemon.withDaemon(environment: ["ERRORBUSD_SYNC_BANDWIDTH": "256KiB/s"]) { sandbox, daemon in
            let watcher = try ChildProcess(Binaries.path("errorbusctl"), ["watch", "--json", "--socket", daemon.controlSocket])
            defer { watcher.terminate() }
            #expect(await watcher.waitForStandardOutput(containing: #""kind":"synchronized""#))

            // 32 s of the limit, on its way before anything goes wrong.
            let big = Data(repeating: 0xB3, count: 8 << 20)
            try daemon.drop("big.bin", content: big)
            try await daemon.waitForLog("uploading=1")
            // New uploads meet a captive portal: an `unreachable` incident, which its probe
            // (`GET /healthz`, not faulted) finds reachable: it releases its upload.
            try await sandbox.fault(#"{"route":"items","mode":"captivePortal"}"#)
            try daemon.drop("small.txt", content: Data("a small file\n".utf8))
            #expect(await watcher.waitForStandardOutput(containing: #""kind":"incidentOpened""#))
            #expect(await watcher.waitForStandardOutput(containing: #""kind":"releaseStarted""#), "\(watcher.standardOutput.text)")

            // One reading: the probe was answered, and the big upload is still under way.
            let stats = try await sandbox.stats()
            let probes = stats.requests.byRoute["healthz"] ?? [:]
            let uploads = stats.requests.byRoute["items"] ?? [:]
            #expect(probes["204"] ?? 0 >= 1, "no probe answered: \(stats.requests.byRoute)")
            #expect(uploads["201"] == nil, "the big upload had finished before the probe: \(stats.requests.byRoute)")

            // The portal gone, the released upload goes through and the incident ends.
            try await sandbox.clearFaults()
            try await DirectoryWatcher.wait(for: daemon.outbox) { $0.isEmpty }
            #expect(try await sandbox.items().count == 2)
            #expect(await watcher.waitForStandardOutput(containing: #""kind":"incidentResolved""#), "\(watcher.standardOutput.text)")
        }
    }
}
