import AsyncHTTPClient
import ErrorBus
import ErrorBusControl
import ErrorBusDaemon
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
            if not re.fullmatch(r"(errorbus|process)_[a-z0-9_]+", name):
                problems.append(f"{name}: not snake case under errorbus_ (or a standard process_ metric)")
            for sample in family.samples:
                for label, value in sample.labels.items():
                    if label not in ("le", "scope", "version") and not re.fullmatch(r"[a-z0-9_.]+", value):
                        problems.append(f"{name}: label {label}={value!r} is not snake case")
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

    /// What an alert asks of a host, through an outage: every family described (`promtool check
    /// metrics` has nothing to say), every counter there at 0 before its first event, failures
    /// counted while the incident absorbs them, the incident by service, category and scope with
    /// its age, the health verdict and its levels, the version and the process.
    @Test func aScrapeThroughAnOutageTellsWhatAnAlertAsks() async throws {
        let scratch = try ScratchDirectory("metrics-outage")
        try await Daemon.withDaemon(environment: ["ERRORBUSD_METRICS_LISTEN": "127.0.0.1:0"]) { sandbox, daemon in
            try await daemon.waitForLog("/metrics (metrics.listen)")
            let port = try #require(Self.port(in: daemon.log))

            // Before anything happened: each counter a first event raises is there, at 0.
            let quiet = try await Self.parse(try await Self.scrape(port), in: scratch)
            #expect(quiet.problems.isEmpty, "\(quiet.problems)")
            for service in ["sync", "loader", "auth"] {
                for category in ["transient", "unreachable", "rate_limited", "unauthenticated", "invalid", "fatal", "paused"] {
                    for name in IncidentReporter.counterNames {
                        #expect(quiet.value(name, ["service": service, "category": category]) == 0, "\(name) \(service) \(category)")
                    }
                }
            }
            #expect(quiet.value("errorbus_jobs_dead_lettered_total", ["service": "sync", "category": "overflow"]) == 0)
            #expect(quiet.value("errorbus_sync_dead_letters_pruned_total", ["limit": "max_count"]) == 0)
            #expect(quiet.value("errorbus_health_status") == 0)
            #expect(quiet.families["errorbus_incidents_open"]?.samples.isEmpty ?? true)

            // The API fails every upload: one incident holds the files.
            try await sandbox.fault(#"{"route":"items","mode":"status","status":503}"#)
            for number in 0..<5 { try daemon.drop("item-\(number).bin", content: Daemon.content(number)) }
            try await daemon.waitForLog("incident 1 opened")
            // One scrape, taken once all five are parked, is read for every check below: a canary
            // may take a parked job between two scrapes. The health check's measure is the one its
            // last evaluation used, which may come from a moment when a canary had one of them:
            // the scrape read is one where both say five.
            var text = try await Self.scrape(port)
            var outage = try await Self.parse(text, in: scratch)
            while outage.value("errorbus_jobs", ["service": "sync", "state": "parked"]) != 5
                || outage.value("errorbus_health_check_value", ["check": "parked"]) != 5
            {
                try await Task.sleep(for: .milliseconds(50))
                text = try await Self.scrape(port)
                outage = try await Self.parse(text, in: scratch)
            }
            let lint = try await Self.promtool(["check", "metrics"], input: text, in: scratch)
            #expect(lint.status == 0 && lint.output.isEmpty, "promtool check metrics: \(lint.output)")
            #expect(outage.problems.isEmpty, "\(outage.problems)")
            // The parser names a counter's family without its samples' `_total`.
            let catalog = Set(MetricCatalog.families.map { $0.kind == .counter ? String($0.name.dropLast("_total".count)) : $0.name })
            let missing = catalog.subtracting(outage.families.keys)
            #expect(missing.isEmpty, "families the catalog lists and the scrape lacks: \(missing)")
            let undescribed = Set(outage.families.keys).subtracting(catalog)
            #expect(undescribed.isEmpty, "families the catalog does not describe: \(undescribed)")
            #expect(outage.families["errorbus_jobs_parked"] == nil, "parked jobs are a state of errorbus_jobs")
            // The names, types and labels the shipped rules and dashboard may use are these.
            let shipped = try Self.shippedFamilies()
            let scraped = Dictionary(uniqueKeysWithValues: outage.families.map { name, family in
                let labels = Set(family.samples.flatMap(\.labels.keys)).subtracting(["le"])
                return (family.type == "counter" ? name + "_total" : name, "\(family.type) \(labels.sorted().joined(separator: ","))")
            })
            #expect(shipped == scraped, "etc/prometheus/metric-names.txt against a scrape: \(shipped.filter { scraped[$0.key] != $0.value }) \(scraped.filter { shipped[$0.key] != $0.value })")

            let open = try #require(outage.families["errorbus_incidents_open"]?.samples.first, "no open incident series")
            let incident = open.labels
            #expect(incident["service"] == "sync" && incident["scope"] == sandbox.baseURL, "\(incident)")
            #expect(open.value == 1)
            let category = try #require(incident["category"])
            #expect(outage.value("errorbus_incident_oldest_age_seconds", incident).map { $0 > 0 } == true)
            #expect(outage.value("errorbus_incidents_needing_operator", incident) == 0)
            #expect(outage.value("errorbus_incidents_opened_total", ["service": "sync", "category": category]) == 1)
            // Counted as absorbed, while the incident is open.
            let absorbed = try #require(outage.value("errorbus_failures_absorbed_total", ["service": "sync", "category": category]))
            #expect(absorbed >= 1)
            #expect(outage.value("errorbus_incidents_resolved_total", ["service": "sync", "category": category]) == 0)
            let jobs = outage.families["errorbus_jobs"]?.samples.filter { $0.labels["service"] == "sync" }.map(\.value).reduce(0, +)
            #expect(jobs == 5, "each job once: \(outage.families["errorbus_jobs"]?.samples ?? [])")

            // Health: the verdict, each check's measure and its levels (the defaults here).
            #expect(outage.value("errorbus_health_check_value", ["check": "parked"]) == 5)
            #expect(outage.value("errorbus_health_check_threshold", ["check": "incident_age", "level": "warning"]) == 600)
            #expect(outage.value("errorbus_health_check_threshold", ["check": "free_space", "level": "critical"]).map { $0 > 0 } == true)
            #expect(outage.value("errorbus_health_status").map { (0...2).contains($0) } == true)
            // The version and the process.
            #expect(outage.value("errorbus_build_info", ["version": ErrorBusVersion.current]) == 1)
            #expect(outage.value("process_resident_memory_bytes").map { $0 > 1_048_576 } == true)
            let started = try #require(outage.value("process_start_time_seconds"))
            #expect(abs(started - Date().timeIntervalSince1970) < 600, "started \(started)")
            let openFiles = try #require(outage.value("process_open_fds"))
            #expect(openFiles > 3 && openFiles <= (outage.value("process_max_fds") ?? 0))

            // The API heals: the files go, the incident resolves, its series go with it, and
            // its failures are not counted again.
            try await sandbox.clearFaults()
            try await DirectoryWatcher.wait(for: daemon.outbox) { $0.isEmpty }
            try await daemon.waitForLog("incident 1 recovered")
            let healed = try await Self.parse(try await Self.scrape(port), in: scratch)
            #expect(healed.families["errorbus_incidents_open"]?.samples.isEmpty ?? true)
            #expect(healed.families["errorbus_incident_oldest_age_seconds"]?.samples.isEmpty ?? true)
            #expect(healed.value("errorbus_incidents_resolved_total", ["service": "sync", "category": category]) == 1)
            #expect(healed.value("errorbus_failures_absorbed_total", ["service": "sync", "category": category]).map { $0 >= absorbed } == true)
            let finalAbsorbed = try #require(healed.value("errorbus_failures_absorbed_total", ["service": "sync", "category": category]))
            let told = try #require(Self.failures(in: daemon.log))
            #expect(finalAbsorbed == Double(told), "the counter and the incident's line agree")
            #expect(healed.value("errorbus_sync_delivered_total") == 5)
        }
    }

    /// `etc/prometheus/metric-names.txt`: each family's type and labels (sorted), by name.
    static func shippedFamilies() throws -> [String: String] {
        let path = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("../../../etc/prometheus/metric-names.txt").standardized.path
        var families: [String: String] = [:]
        for line in try String(contentsOfFile: path, encoding: .utf8).split(separator: "\n") where !line.hasPrefix("#") {
            let fields = line.split(separator: " ")
            guard fields.count >= 2 else { continue }
            let labels = fields.count > 2 ? fields[2].split(separator: ",").map(String.init).sorted() : []
            families[String(fields[0])] = "\(fields[1]) \(labels.joined(separator: ","))"
        }
        return families
    }

    /// `ERRORBUS_FAILURES=N` of the resolved line.
    static func failures(in log: String) -> Int? {
        guard let line = log.split(separator: "\n").first(where: { $0.contains("incident 1 recovered") }),
              let range = line.range(of: "ERRORBUS_FAILURES=")
        else { return nil }
        return Int(line[range.upperBound...].prefix { $0.isNumber })
    }

    static func scrape(_ port: Int) async throws -> String {
        let http = HTTPClient(eventLoopGroupProvider: .singleton)
        defer { _ = http.shutdown() }
        let response = try await http.execute(HTTPClientRequest(url: "http://127.0.0.1:\(port)/metrics"), timeout: .seconds(5))
        return String(buffer: try await response.body.collect(upTo: 1 << 22))
    }

    /// Runs Debian's `promtool` with `input` on its standard input.
    static func promtool(_ arguments: [String], input: String, in scratch: borrowing ScratchDirectory) async throws -> (status: Int32, output: String) {
        let file = scratch.file("promtool-input.txt")
        try Data(input.utf8).write(to: URL(fileURLWithPath: file))
        let quoted = arguments.map { "'\($0)'" }.joined(separator: " ")
        let finished = try await ChildProcess.run("/bin/sh", ["-c", "promtool \(quoted) < '\(file)' 2>&1"])
        return (finished.status, finished.standardOutput)
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
