import ErrorBusControl
import Foundation
import Glibc
import TestSupport
import Testing
import Varlink

/// `sync.bandwidth` as nginx sees it: the rate of an upload's body, measured on the server's side
/// (`$request_length` over `$request_time`, from its first byte to its last) over 20 s, within
/// 10 % of the limit at three rates, each set by a reload; and a reload mid-upload lifting it.
@Suite(
    "Integration: errorbusd's bandwidth limit, measured by nginx",
    .serialized,
    .timeLimit(.minutes(3)),
    .enabled(if: NginxProcess.executable != nil, "nginx is not installed (scripts/test installs nginx-light)")
)
struct BandwidthIntegrationTests {
    static let servers = """
        log_format rate '$request_method $uri $status $request_length $request_time';
        server {
            listen 127.0.0.1:{port};
            access_log {root}/rate.log rate;
            location = /healthz { return 204; }
            location /dav/ {
                root {root}/html;
                dav_methods PUT;
                create_full_put_path on;
            }
        }
        """

    /// What nginx measured of the PUT of `name`: bytes of the request and seconds it took.
    static func measured(_ nginx: NginxProcess, _ name: String) throws -> (bytes: Double, seconds: Double) {
        let log = try String(contentsOfFile: nginx.directory + "/rate.log", encoding: .utf8)
        let line = try #require(log.split(separator: "\n").last { $0.hasPrefix("PUT /dav/\(name) ") }, "\(log)")
        let fields = line.split(separator: " ")
        return (try #require(Double(fields[3])), try #require(Double(fields[4])))
    }

    /// Sets `sync.bandwidth` in a drop-in; with `reload`, reloads and waits for errorbusd to say so.
    static func setBandwidth(_ setting: String, _ daemon: DaemonProcess, reload: Bool) async throws {
        let directory = daemon.configurationFile + ".d"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        try "sync:\n  bandwidth: \(setting)\n".write(toFile: directory + "/bandwidth.yaml", atomically: true, encoding: .utf8)
        guard reload else { return }
        let before = daemon.log.components(separatedBy: "sync.bandwidth is now \(setting),").count
        try daemon.signal(SIGHUP)
        try await daemon.waitForLog("sync.bandwidth is now \(setting),", count: before)
    }

    /// nginx, started, storing PUTs under `/dav/`, and a daemon (not started) sending it files.
    static func started(in scratch: borrowing ScratchDirectory) async throws -> (NginxProcess, DaemonProcess) {
        let nginx = try NginxProcess(in: scratch, servers: servers)
        try await nginx.start()
        let daemon = try DaemonProcess(
            in: scratch, baseURL: nginx.baseURL, api: ForeignServerIntegrationTests.webDAVContract(nginx).replacingOccurrences(of: "/dav/incoming/", with: "/dav/"),
            auth: "  method: none", credentials: [:]
        )
        return (nginx, daemon)
    }

    /// `count` bytes, the same throughout but for its first: a file of its own per size.
    static func content(_ count: Int, _ tag: UInt8) -> Data {
        var data = Data(repeating: 0x5A, count: count)
        data[0] = tag
        return data
    }

    @Test func theRateNginxMeasuresIsTheLimitAtThreeRatesEachSetByAReload() async throws {
        let scratch = try ScratchDirectory("bandwidth")
        let (nginx, daemon) = try await Self.started(in: scratch)
        try await Self.setBandwidth("256KiB/s", daemon, reload: false)
        try await ForeignServerIntegrationTests.run(daemon, stopping: [nginx]) {
            for (index, (setting, rate)) in [("256KiB/s", 256 * 1024), ("1MiB/s", 1 << 20), ("4MiB/s", 4 << 20)].enumerated() {
                if index > 0 { try await Self.setBandwidth(setting, daemon, reload: true) }
                // Told as it is in force.
                let status = try await ControlIntegrationTests.varlink(daemon) { try await $0.call(Control.getStatus) }
                #expect(status.bandwidth == Control.Bandwidth(setting: setting, bytesPerSecond: rate, until: nil))
                if index == 0 {
                    let shown = try await ControlIntegrationTests.ctl(daemon, "status")
                    #expect(shown.standardOutput.contains("Bandwidth: 256.0 KiB/s now (sync.bandwidth 256KiB/s)"), "\(shown.standardOutput)")
                }
                // 20 s of the limit.
                try daemon.drop("rate-\(index).bin", content: Self.content(20 * rate, UInt8(index)))
                try await DirectoryWatcher.wait(for: daemon.outbox) { $0.isEmpty }
                let (bytes, seconds) = try Self.measured(nginx, "rate-\(index).bin")
                let measured = bytes / seconds
                print("bandwidth: sync.bandwidth \(setting) (\(rate) B/s): nginx measured \(Int(measured)) B/s, \(Int(bytes)) bytes in \(seconds) s = \(String(format: "%+.2f", 100 * (measured / Double(rate) - 1))) %")
                #expect(abs(measured / Double(rate) - 1) < 0.1, "\(setting): nginx measured \(Int(measured)) B/s over \(seconds) s")
            }
        }
        await nginx.stop()
    }

    /// A reload lifts the limit of an upload under way: the rest of its body goes at once.
    @Test func aReloadChangesTheRateOfTheUploadUnderWay() async throws {
        let scratch = try ScratchDirectory("bandwidth-reload")
        let (nginx, daemon) = try await Self.started(in: scratch)
        try await Self.setBandwidth("128KiB/s", daemon, reload: false)
        try await ForeignServerIntegrationTests.run(daemon, stopping: [nginx]) {
            // 60 s at 128 KiB/s.
            try daemon.drop("big.bin", content: Self.content(60 * 128 * 1024, 0xFF))
            // Its first MiB in nginx's buffer of the body: 8 s at the limit.
            try await DirectoryWatcher.wait(forSizesIn: nginx.directory + "/tmp/body") { $0.values.contains { $0 >= 1 << 20 } }
            try await Self.setBandwidth("off", daemon, reload: true)
            try await DirectoryWatcher.wait(for: daemon.outbox) { $0.isEmpty }
            let (bytes, seconds) = try Self.measured(nginx, "big.bin")
            #expect(bytes >= Double(60 * 128 * 1024))
            #expect(seconds >= 7.5, "the first MiB did not go at the limit: \(seconds) s in all")
            #expect(seconds < 30, "the upload kept the old limit: \(seconds) s")
        }
        await nginx.stop()
    }

    /// A server that stops reading an upload's body (nginx's worker stopped with `SIGSTOP`: its
    /// connection open, its window closed) is an incident once `api.request-timeout` (5 s) passes
    /// without a byte taken, not a request waiting for ever; once it reads again, the file goes.
    @Test func aServerThatStopsReadingMidBodyIsAnIncidentAtTheRequestTimeout() async throws {
        let scratch = try ScratchDirectory("bandwidth-stalled")
        let (nginx, daemon) = try await Self.started(in: scratch)
        // 16 s at 2 MiB/s: still on its way when nginx stops, and more than the kernel's buffers hold.
        try await Self.setBandwidth("2MiB/s", daemon, reload: false)
        try await ForeignServerIntegrationTests.run(daemon, stopping: [nginx]) {
            let workers = nginx.workers
            try #require(!workers.isEmpty, "nginx's workers not found")
            try daemon.drop("stalled.bin", content: Self.content(32 << 20, 0x33))
            try await daemon.waitForLog("uploading=1")
            for worker in workers { kill(worker, SIGSTOP) }
            try await daemon.waitForLog("incident 1 opened: ")
            for worker in workers { kill(worker, SIGCONT) }
            #expect(daemon.log.contains("stopped accepting the body of PUT"), "\(daemon.log.suffix(2000))")
            try await daemon.waitForLog("incident 1 recovered")
            try await DirectoryWatcher.wait(for: daemon.outbox) { $0.isEmpty }
            let stored = try Data(contentsOf: URL(fileURLWithPath: nginx.directory + "/html/dav/stalled.bin"))
            #expect(stored == Self.content(32 << 20, 0x33))
        }
        await nginx.stop()
    }
}
