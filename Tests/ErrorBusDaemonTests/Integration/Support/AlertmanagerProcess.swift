import AsyncHTTPClient
import Foundation
import NIOCore
import NIOFoundationEssentialsCompat
import Synchronization
import TestSupport

/// Debian's real Alertmanager (`prometheus-alertmanager`), on a loopback port with its own
/// storage and no cluster, logging each group it flushes; its API's alerts.
final class AlertmanagerProcess: Sendable {
    let port: Int
    let directory: String
    private let process: Mutex<ChildProcess?>
    private let http = HTTPClient(eventLoopGroupProvider: .singleton)

    static var executable: String? { ChildProcess.find("prometheus-alertmanager") ?? ChildProcess.find("alertmanager") }

    /// Writes `configuration` (an alertmanager.yml) and picks the port, for a Prometheus
    /// configuration to name before the Alertmanager starts.
    init(in scratch: borrowing ScratchDirectory, configuration: String) throws {
        directory = scratch.file("alertmanager")
        try FileManager.default.createDirectory(atPath: directory + "/data", withIntermediateDirectories: true)
        try configuration.write(toFile: directory + "/alertmanager.yml", atomically: true, encoding: .utf8)
        port = try NginxProcess.freePort()
        process = Mutex(nil)
    }

    /// `127.0.0.1:PORT`, as Prometheus's `alerting.alertmanagers` names it.
    var address: String { "127.0.0.1:\(port)" }

    /// Starts it and waits until it listens.
    func start() async throws {
        guard let executable = Self.executable else {
            throw ChildProcessError(description: "prometheus-alertmanager is not installed (scripts/test installs Debian's prometheus-alertmanager)")
        }
        let child = try ChildProcess(executable, [
            "--config.file=\(directory)/alertmanager.yml",
            "--storage.path=\(directory)/data",
            "--web.listen-address=\(address)",
            // No cluster: no gossip port, no wait for peers before a notification.
            "--cluster.listen-address=",
            // The dispatcher logs each group it flushes ("msg=flushing"), the event a test waits for.
            "--log.level=debug",
        ])
        process.withLock { $0 = child }
        guard await child.waitForStandardError(containing: "msg=\"Listening on\"") else {
            let finished = await child.waitForExit()
            throw ChildProcessError(description: "alertmanager exited with \(finished.status) before it listened:\n\(finished.standardError)")
        }
    }

    /// Waits until its log satisfies `condition`; false if it exited first (the test's time limit
    /// bounds it).
    func waitForLog(until condition: @escaping @Sendable (String) -> Bool) async -> Bool {
        guard let child = process.withLock({ $0 }) else { return false }
        return await child.standardError.wait(until: condition)
    }

    var log: String { process.withLock { $0 }?.standardError.text ?? "" }

    func stop() async {
        if let child = process.withLock({ $0 }) {
            child.terminate()
            _ = await child.waitForExit()
        }
        try? await http.shutdown()
    }

    /// An alert as Alertmanager holds it: its labels, its state (`active`, `suppressed`,
    /// `unprocessed`) and the fingerprints of the alerts inhibiting it.
    struct Alert: Sendable {
        var labels: [String: String]
        var state: String
        var inhibitedBy: [String]
    }

    /// Every alert it holds now (`GET /api/v2/alerts`).
    func alerts() async throws -> [Alert] {
        let response = try await http.execute(HTTPClientRequest(url: "http://\(address)/api/v2/alerts"), timeout: .seconds(10))
        let body = try await response.body.collect(upTo: 1 << 24)
        let alerts = try JSONSerialization.jsonObject(with: Data(buffer: body)) as? [[String: Any]] ?? []
        return alerts.map { alert in
            let status = alert["status"] as? [String: Any] ?? [:]
            return Alert(
                labels: alert["labels"] as? [String: String] ?? [:],
                state: status["state"] as? String ?? "",
                inhibitedBy: status["inhibitedBy"] as? [String] ?? []
            )
        }
    }
}
