import AsyncHTTPClient
import ErrorBusControl
import Foundation
#if canImport(Glibc)
import Glibc
#endif
import NIOCore
import NIOHTTP1
import Varlink
import TestSupport
import Testing

/// `metrics.listen`: a real scrape over HTTP, parsed by the Prometheus project's own Python
/// parser, with the naming conventions checked.
@Suite("Integration: the metrics listener", .serialized, .timeLimit(.minutes(2)))
struct MetricsIntegrationTests {
    typealias Daemon = DaemonIntegrationTests

    /// Parses an exposition with `prometheus_client` and checks Prometheus' naming conventions:
    /// snake case under `errorbus_`, `_total` on counters and only on them, base units (seconds,
    /// bytes) in the name, histograms with their `+Inf` bucket, `_sum` and `_count`. Prints the
    /// problems and every sample as JSON.
    static let checker = #"""
        import json, re, sys
        from prometheus_client.parser import text_string_to_metric_families
        problems, families = [], {}
        for family in text_string_to_metric_families(open(sys.argv[1]).read()):
            name = family.name
            if not re.fullmatch(r"errorbus_[a-z0-9_]+", name):
                problems.append(f"{name}: not snake case under errorbus_")
            for unit in ("_ms", "_milliseconds", "_microseconds", "_minutes", "_hours", "_kb", "_mb", "_kib", "_mib", "_percent"):
                if unit + "_" in name + "_":
                    problems.append(f"{name}: {unit[1:]} is not a base unit")
            names = {sample.name for sample in family.samples}
            if family.type == "counter":
                if not all(n.endswith("_total") for n in names):
                    problems.append(f"{name}: a counter's samples must end in _total: {sorted(names)}")
            elif any(n.endswith("_total") for n in names):
                problems.append(f"{name}: only counters end in _total ({family.type})")
            if family.type == "histogram":
                for part in ("_bucket", "_sum", "_count"):
                    if name + part not in names:
                        problems.append(f"{name}: no {part}")
                if not any(s.labels.get("le") == "+Inf" for s in family.samples):
                    problems.append(f"{name}: no +Inf bucket")
            if family.type == "unknown":
                problems.append(f"{name}: no TYPE")
            families[name] = {
                "type": family.type,
                "samples": [[s.name, s.labels, s.value] for s in family.samples],
            }
        print(json.dumps({"problems": problems, "families": families}))
        """#

    struct Parsed: Decodable {
        struct Family: Decodable {
            var type: String
            var samples: [Sample]
        }

        struct Sample: Decodable {
            var name: String
            var labels: [String: String]
            var value: Double

            init(from decoder: any Decoder) throws {
                var container = try decoder.unkeyedContainer()
                name = try container.decode(String.self)
                labels = try container.decode([String: String].self)
                value = try container.decode(Double.self)
            }
        }

        var problems: [String]
        var families: [String: Family]

        func value(_ sample: String, _ labels: [String: String] = [:]) -> Double? {
            families.values.lazy.flatMap(\.samples).first { $0.name == sample && $0.labels == labels }?.value
        }
    }

    static func parse(_ text: String, in scratch: borrowing ScratchDirectory) async throws -> Parsed {
        let file = scratch.file("scrape.txt")
        try Data(text.utf8).write(to: URL(fileURLWithPath: file))
        let finished = try await ChildProcess.run("/usr/bin/env", ["python3", "-c", checker, file])
        #expect(finished.status == 0, "the parser refused the exposition: \(finished.standardError)")
        return try JSONDecoder().decode(Parsed.self, from: Data(finished.standardOutput.utf8))
    }

    @Test func aScrapeIsTheControlSocketsExpositionInPrometheusFormWithHistograms() async throws {
        let scratch = try ScratchDirectory("metrics")
        try await Daemon.withDaemon(environment: ["ERRORBUSD_METRICS_LISTEN": "127.0.0.1:0"]) { sandbox, daemon in
            try await daemon.waitForLog("/metrics (metrics.listen)")
            let port = try #require(Self.port(in: daemon.log))
            for number in 0..<5 { try daemon.drop("item-\(number).bin", content: Daemon.content(number)) }
            try await DirectoryWatcher.wait(for: daemon.outbox) { $0.isEmpty }

            let http = HTTPClient(eventLoopGroupProvider: .singleton)
            defer { _ = http.shutdown() }
            let response = try await http.execute(HTTPClientRequest(url: "http://127.0.0.1:\(port)/metrics"), timeout: .seconds(5))
            #expect(response.status == .ok)
            #expect(response.headers.first(name: "Content-Type") == "text/plain; version=0.0.4; charset=utf-8")
            let scraped = String(buffer: try await response.body.collect(upTo: 1 << 22))
            let parsed = try await Self.parse(scraped, in: scratch)
            #expect(parsed.problems.isEmpty, "\(parsed.problems)")

            // Every delivered file: its attempts (one each) and the time from arrival.
            #expect(parsed.families["errorbus_sync_delivery_attempts"]?.type == "histogram")
            #expect(parsed.value("errorbus_sync_delivery_attempts_count") == 5)
            #expect(parsed.value("errorbus_sync_delivery_attempts_bucket", ["le": "1.0"]) == 5)
            #expect(parsed.families["errorbus_sync_delivery_delay_seconds"]?.type == "histogram")
            #expect(parsed.value("errorbus_sync_delivery_delay_seconds_count") == 5)
            #expect(parsed.value("errorbus_sync_delivered_total") == 5)
            // The backlog, emptied, and the limiter of the API's scope.
            #expect(parsed.value("errorbus_sync_backlog_files") == 0)
            #expect(parsed.value("errorbus_sync_backlog_bytes") == 0)
            #expect(parsed.value("errorbus_sync_backlog_oldest_age_seconds") == 0)
            #expect(parsed.value("errorbus_concurrency_limit", ["scope": sandbox.baseURL]).map { $0 >= 1 } == true)

            // The same registry as the control socket's GetMetrics.
            let viaControl = try await ControlIntegrationTests.varlink(daemon) { try await $0.call(Control.getMetrics) }.text
            #expect(Set(try await Self.parse(viaControl, in: scratch).families.keys) == Set(parsed.families.keys))

            // HEAD answers as GET without the body; other methods are refused.
            var head = HTTPClientRequest(url: "http://127.0.0.1:\(port)/metrics")
            head.method = .HEAD
            #expect(try await http.execute(head, timeout: .seconds(5)).status == .ok)
            var post = HTTPClientRequest(url: "http://127.0.0.1:\(port)/metrics")
            post.method = .POST
            let refused = try await http.execute(post, timeout: .seconds(5))
            #expect(refused.status == .methodNotAllowed)
            #expect(refused.headers.first(name: "Allow") == "GET, HEAD")

            // Nothing else is served.
            let other = try await http.execute(HTTPClientRequest(url: "http://127.0.0.1:\(port)/"), timeout: .seconds(5))
            #expect(other.status == .notFound)
        }
    }

    @Test func aPortInUseIsAnErrorThatDoesNotStopDelivery() async throws {
        let (descriptor, port) = try Self.listeningSocket()
        defer { close(descriptor) }
        try await Daemon.withDaemon(environment: ["ERRORBUSD_METRICS_LISTEN": "127.0.0.1:\(port)"]) { _, daemon in
            try await daemon.waitForLog("cannot serve metrics on metrics.listen 127.0.0.1:\(port): Address already in use (errno 98)")
            try daemon.drop("item.bin", content: Daemon.content(1))
            try await DirectoryWatcher.wait(for: daemon.outbox) { $0.isEmpty }
        }
    }

    /// A TCP socket listening on a free port of 127.0.0.1, and the port.
    static func listeningSocket() throws -> (CInt, Int) {
        let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard descriptor >= 0 else { throw TestSocketError.call("socket", errno) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { address in
                bind(descriptor, address, length) == 0 && listen(descriptor, 1) == 0 && getsockname(descriptor, address, &length) == 0
            }
        }
        guard bound else { throw TestSocketError.call("bind", errno) }
        return (descriptor, Int(UInt16(bigEndian: address.sin_port)))
    }

    /// The port of "metrics served on http://127.0.0.1:PORT/metrics".
    static func port(in log: String) -> Int? {
        guard let range = log.range(of: "metrics served on http://127.0.0.1:") else { return nil }
        return Int(log[range.upperBound...].prefix { $0.isNumber })
    }
}
