import AsyncHTTPClient
import Foundation
import NIOCore
import NIOFoundationEssentialsCompat
import Synchronization
import TestSupport

/// Debian's real Prometheus server, scraping on a loopback port with its own storage, and its
/// HTTP API's queries and alerts.
final class PrometheusProcess: Sendable {
    let port: Int
    let directory: String
    private let arguments: [String]
    private let process: Mutex<ChildProcess?>
    private let http = HTTPClient(eventLoopGroupProvider: .singleton)

    static var executable: String? { ChildProcess.find("prometheus") }

    /// Writes `configuration` (a prometheus.yml) and the rule files (name → text) it names;
    /// `arguments` are given to the server besides its files and port.
    init(in scratch: borrowing ScratchDirectory, configuration: String, rules: [String: String], arguments: [String] = []) throws {
        self.arguments = arguments
        directory = scratch.file("prometheus")
        try FileManager.default.createDirectory(atPath: directory + "/data", withIntermediateDirectories: true)
        for (name, text) in rules {
            try text.write(toFile: directory + "/" + name, atomically: true, encoding: .utf8)
        }
        try configuration.write(toFile: directory + "/prometheus.yml", atomically: true, encoding: .utf8)
        port = try NginxProcess.freePort()
        process = Mutex(nil)
    }

    var baseURL: String { "http://127.0.0.1:\(port)" }

    /// Starts Prometheus and waits until it says it serves requests.
    func start() async throws {
        guard let executable = Self.executable else { throw ChildProcessError(description: "prometheus is not installed (scripts/test installs Debian's prometheus)") }
        let child = try ChildProcess(executable, [
            "--config.file=\(directory)/prometheus.yml",
            "--storage.tsdb.path=\(directory)/data",
            "--web.listen-address=127.0.0.1:\(port)",
        ] + arguments)
        process.withLock { $0 = child }
        guard await child.waitForStandardError(containing: "Server is ready to receive web requests.") else {
            let finished = await child.waitForExit()
            throw ChildProcessError(description: "prometheus exited with \(finished.status) before it was ready:\n\(finished.standardError)")
        }
    }

    func stop() async {
        if let child = process.withLock({ $0 }) {
            child.terminate()
            _ = await child.waitForExit()
        }
        try? await http.shutdown()
    }

    /// One sample of a query's answer.
    struct Sample: Sendable {
        var labels: [String: String]
        var value: Double
    }

    struct QueryFailed: Error, CustomStringConvertible {
        var description: String
    }

    /// Evaluates `query` now: its samples (a scalar is one sample without labels).
    func query(_ query: String) async throws -> [Sample] {
        var components = URLComponents(string: baseURL + "/api/v1/query")!
        components.queryItems = [URLQueryItem(name: "query", value: query)]
        // `+` means a space in a query string.
        let url = components.url!.absoluteString.replacing("+", with: "%2B")
        let response = try await http.execute(HTTPClientRequest(url: url), timeout: .seconds(10))
        let body = try await response.body.collect(upTo: 1 << 24)
        guard let json = try JSONSerialization.jsonObject(with: Data(buffer: body)) as? [String: Any],
              json["status"] as? String == "success",
              let data = json["data"] as? [String: Any]
        else { throw QueryFailed(description: "\(query): \(String(buffer: body))") }
        func number(_ pair: Any?) -> Double? {
            ((pair as? [Any])?.last as? String).flatMap(Double.init)
        }
        switch data["resultType"] as? String {
        case "scalar":
            return number(data["result"]).map { [Sample(labels: [:], value: $0)] } ?? []
        default:
            return (data["result"] as? [[String: Any]] ?? []).compactMap { series in
                guard let value = number(series["value"]) else { return nil }
                return Sample(labels: series["metric"] as? [String: String] ?? [:], value: value)
            }
        }
    }

    /// The alerts pending or firing now: name, instance and state.
    func alerts() async throws -> [(name: String, instance: String, state: String)] {
        let response = try await http.execute(HTTPClientRequest(url: baseURL + "/api/v1/alerts"), timeout: .seconds(10))
        let body = try await response.body.collect(upTo: 1 << 24)
        let json = try JSONSerialization.jsonObject(with: Data(buffer: body)) as? [String: Any]
        let alerts = (json?["data"] as? [String: Any])?["alerts"] as? [[String: Any]] ?? []
        return alerts.map { alert in
            let labels = alert["labels"] as? [String: String] ?? [:]
            return (labels["alertname"] ?? "", labels["instance"] ?? "", alert["state"] as? String ?? "")
        }
    }
}
