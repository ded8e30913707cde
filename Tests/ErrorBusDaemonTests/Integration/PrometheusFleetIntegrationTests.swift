import ErrorBusControl
import ErrorBusTesting
import Foundation
import Synchronization
import TestSupport
import Varlink
import Testing

/// A fleet as its operators watch it: Debian's real Prometheus scraping five errorbusd that
/// share one API, through an outage and its recovery, with the shipped recording and alerting
/// rules (their `for:` shortened in the test's copy) and every query of the shipped dashboard;
/// and the shipped Alertmanager example in a real Alertmanager, for an outage of the whole fleet.
@Suite("Integration: a fleet watched by a real Prometheus", .serialized, .timeLimit(.minutes(3)))
struct PrometheusFleetIntegrationTests {
    static let hosts = 5
    static let filesPerHost = 3
    static let repository = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("../../..").standardized.path

    /// The shipped rules with each `for:` made `for: 2s`, evaluated every second.
    static func rules(_ name: String) throws -> String {
        let text = try String(contentsOfFile: repository + "/etc/prometheus/" + name, encoding: .utf8)
        return text.replacing(/for: \d+[smh]/, with: "for: 2s").replacing(/interval: \d+[smh]/, with: "interval: 1s")
    }

    /// The shipped alerting rules with `for: 2s` for the fleet's alert and `for: 20s` for every
    /// other, evaluated every second.
    static func rulesWithTheFleetAlertAhead() throws -> String {
        try rules("errorbus-alerts.yml").split(separator: "      - alert: ", omittingEmptySubsequences: false).map { block in
            block.hasPrefix("ErrorbusScopeFailing\n") ? String(block) : String(block).replacing("for: 2s", with: "for: 20s")
        }.joined(separator: "      - alert: ")
    }

    /// The shipped Alertmanager example with its receivers' webhooks made `webhook`'s, and each
    /// group's wait and interval made a second.
    static func alertmanagerConfiguration(webhook: String) throws -> String {
        let text = try String(contentsOfFile: repository + "/etc/alertmanager/errorbus-alertmanager.example.yml", encoding: .utf8)
        return text.replacing(/group_(wait|interval): \d+[smh]/) { "group_\($0.output.1): 1s" }
            .replacing(/http:\/\/127\.0\.0\.1:9095/, with: webhook)
    }

    /// Every query of the shipped dashboard, its variables given: every host, a one-minute rate.
    static func dashboardQueries() throws -> [String] {
        let data = try Data(contentsOf: URL(fileURLWithPath: repository + "/etc/grafana/errorbus-dashboard.json"))
        var queries: [String] = []
        func walk(_ panel: [String: Any]) {
            for target in panel["targets"] as? [[String: Any]] ?? [] {
                if let expression = target["expr"] as? String { queries.append(expression) }
            }
            for inner in panel["panels"] as? [[String: Any]] ?? [] { walk(inner) }
        }
        let dashboard = try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
        for panel in dashboard["panels"] as? [[String: Any]] ?? [] { walk(panel) }
        return queries.map { $0.replacing("$host", with: ".*").replacing("$__rate_interval", with: "1m") }
    }

    /// Waits, scraping and evaluating every second, until `condition` holds of a query's
    /// samples; the suite's time limit bounds it.
    static func eventually(
        _ prometheus: PrometheusProcess,
        _ query: String,
        _ what: String,
        sourceLocation: SourceLocation = #_sourceLocation,
        _ condition: ([PrometheusProcess.Sample]) -> Bool
    ) async throws {
        var last: [PrometheusProcess.Sample] = []
        for _ in 0..<120 {
            last = try await prometheus.query(query)
            if condition(last) { return }
            try await Task.sleep(for: .seconds(1))
        }
        Issue.record("\(what): \(query) is still \(last)", sourceLocation: sourceLocation)
    }

    @Test func theFleetViewAndTheIncidentAlertsFollowAnOutageAndItsRecovery() async throws {
        let scratch = try ScratchDirectory("prometheus-fleet")
        let sandbox = try await SandboxProcess(in: scratch)
        var daemons: [DaemonProcess] = []
        var prometheus: PrometheusProcess?
        do {
            for host in 0..<Self.hosts {
                let daemon = try DaemonProcess(
                    directory: scratch.file("host-\(host)"),
                    baseURL: sandbox.baseURL,
                    credentials: ["client-secret": sandbox.clientSecret],
                    environment: [
                        "ERRORBUSD_METRICS_LISTEN": "127.0.0.1:0",
                        // An incident is "open too long" after 2 s on these hosts.
                        "ERRORBUSD_HEALTH_INCIDENT_AGE_WARNING": "2s",
                        // Recovery seen within seconds of the API's: canaries at most 2 s apart,
                        // a recovered incident resolved 1 s later.
                        "ERRORBUSD_BUS_BACKOFF_CAP": "2s",
                        "ERRORBUSD_BUS_SETTLE_WINDOW": "1s",
                    ]
                )
                daemons.append(daemon)
                try await daemon.start()
                try await daemon.waitForLog("/metrics (metrics.listen)")
            }
            let targets = try daemons.enumerated().map { host, daemon in
                let port = try #require(MetricsIntegrationTests.port(in: daemon.log))
                return "      - targets: ['127.0.0.1:\(port)']\n        labels: {instance: 'host-\(host)'}"
            }
            let server = try PrometheusProcess(
                in: scratch,
                configuration: """
                    global: {scrape_interval: 1s, evaluation_interval: 1s}
                    rule_files: [errorbus-recording.yml, errorbus-alerts.yml]
                    scrape_configs:
                      - job_name: errorbusd
                        static_configs:
                    \(targets.joined(separator: "\n"))
                    """,
                rules: ["errorbus-recording.yml": try Self.rules("errorbus-recording.yml"), "errorbus-alerts.yml": try Self.rules("errorbus-alerts.yml")]
            )
            prometheus = server
            try await server.start()
            try await Self.eventually(server, "errorbus:hosts_up:count", "every host scraped") { $0.first?.value == Double(Self.hosts) }
            try await Self.eventually(server, "errorbus:hosts_with_open_incident:count", "no incident yet") { $0.first?.value == 0 }
            // A counter there at 0 from the start: the first incident is an increase.
            #expect(try await server.query("sum(errorbus_incidents_opened_total)").first?.value == 0)

            // The states the incident alert goes through, watched from before the outage until it
            // fires on every host.
            let watching = Task {
                var seen: Set<String> = []
                for _ in 0..<600 {
                    let alerts = (try? await server.alerts()) ?? []
                    let states = alerts.filter { $0.name == "ErrorbusIncidentOpenTooLong" }
                    seen.formUnion(states.map(\.state))
                    if states.filter({ $0.state == "firing" }).count == Self.hosts { break }
                    try? await Task.sleep(for: .milliseconds(100))
                }
                return seen
            }

            // The API fails every upload: each host opens an incident and holds its files.
            try await sandbox.fault(#"{"route":"items","mode":"status","status":503}"#)
            for (host, daemon) in daemons.enumerated() {
                for number in 0..<Self.filesPerHost {
                    try daemon.drop("host-\(host)-\(number).bin", content: Data("file \(number) of host \(host)\n".utf8))
                }
            }
            for daemon in daemons { try await daemon.waitForLog("incident 1 opened") }
            try await Self.eventually(server, "errorbus:hosts_with_open_incident:count", "every host's incident seen") { $0.first?.value == Double(Self.hosts) }
            try await Self.eventually(server, #"errorbus:jobs:sum_by_state{service="sync",state="parked"}"#, "every file held") {
                $0.first?.value == Double(Self.hosts * Self.filesPerHost)
            }
            // Each host's first incident counts, though its counter appeared before it.
            let opened = try await server.query("sum(increase(errorbus_incidents_opened_total[5m]))")
            #expect(opened.first.map { $0.value >= Double(Self.hosts) } == true, "\(opened)")
            let byScope = try await server.query("errorbus:hosts_with_open_incident:count_by_scope")
            #expect(byScope.count == 1 && byScope.first?.labels["scope"] == sandbox.baseURL && byScope.first?.value == Double(Self.hosts), "\(byScope)")
            #expect(try await server.query("errorbus:hosts_by_version:count").map(\.labels["version"]) == [ErrorBusVersion.current])

            // What Prometheus holds is what each host reports of itself. A canary moves one job
            // between parked and in flight for its upload's time, between a scrape and the
            // host's own answer: the two agree once a scrape follows the host's state (within a
            // few scrape intervals, bounded).
            for (host, daemon) in daemons.enumerated() {
                var disagreements: [String] = []
                for _ in 0..<20 {
                    disagreements = []
                    let own = try await MetricsIntegrationTests.parse(
                        try await ControlIntegrationTests.varlink(daemon) { try await $0.call(Control.getMetrics) }.text,
                        in: scratch
                    )
                    for family in ["errorbus_sync_backlog_files", "errorbus_incidents_open", "errorbus_incidents_needing_operator", "errorbus_jobs"] {
                        for sample in own.families[family]?.samples ?? [] {
                            let selector = sample.labels.merging(["instance": "host-\(host)"]) { $1 }.map { "\($0.key)=\"\($0.value)\"" }.sorted().joined(separator: ",")
                            let stored = try await server.query("\(family){\(selector)}")
                            if stored.map(\.value) != [sample.value] {
                                disagreements.append("\(family){\(selector)}: \(sample.value) on the host, \(stored) in Prometheus")
                            }
                        }
                    }
                    if disagreements.isEmpty { break }
                    try await Task.sleep(for: .milliseconds(500))
                }
                #expect(disagreements.isEmpty, "host-\(host): \(disagreements)")
            }

            // Every dashboard query is valid and, in the outage, its fleet panels say so.
            for query in try Self.dashboardQueries() {
                _ = try await server.query(query)
            }
            #expect(try await server.query("errorbus:backlog_files:sum").first?.value == Double(Self.hosts * Self.filesPerHost))

            // Open longer than the hosts' 2 s: pending, then firing on each host.
            // Pending at one rule evaluation at least on each host, as Prometheus itself recorded
            // it (its ALERTS series): a poll of the alerts can miss the 2 s on a loaded machine.
            let states = await watching.value
            let pending = try await server.query(
                #"count(max_over_time(ALERTS{alertname="ErrorbusIncidentOpenTooLong",alertstate="pending"}[10m]))"#
            )
            #expect(pending.first?.value == Double(Self.hosts), "the alert waits its for: before it fires: \(pending); polled: \(states)")
            let firing = Set(try await server.alerts().filter { $0.name == "ErrorbusIncidentOpenTooLong" && $0.state == "firing" }.map(\.instance))
            #expect(firing == Set((0..<Self.hosts).map { "host-\($0)" }), "\(firing)")

            // The API heals: the files go, the incidents resolve, and so do the alerts.
            try await sandbox.clearFaults()
            for daemon in daemons { try await DirectoryWatcher.wait(for: daemon.outbox) { $0.isEmpty } }
            try await Self.eventually(server, "errorbus:hosts_with_open_incident:count", "every incident resolved") { $0.first?.value == 0 }
            for _ in 0..<30 where try await server.alerts().contains(where: { $0.name == "ErrorbusIncidentOpenTooLong" }) {
                try await Task.sleep(for: .seconds(1))
            }
            #expect(try await server.alerts().filter { $0.name == "ErrorbusIncidentOpenTooLong" }.isEmpty)
            try await Self.eventually(server, "sum(errorbus_sync_delivered_total)", "every file delivered") { $0.first?.value == Double(Self.hosts * Self.filesPerHost) }
            try await Self.eventually(server, "errorbus:delivered:rate5m", "deliveries in the fleet's rate") { ($0.first?.value ?? 0) > 0 }
            for query in try Self.dashboardQueries() {
                _ = try await server.query(query)
            }
        } catch {
            for daemon in daemons { _ = try? await daemon.kill() }
            await prometheus?.stop()
            try? await sandbox.stop()
            throw error
        }
        for daemon in daemons { try await daemon.stop().expectClean() }
        await prometheus?.stop()
        try await sandbox.stop()
    }

    /// An outage of the API on every host, as the on-call engineer gets it: the shipped rules
    /// (their `for:` shortened) in Prometheus, sending to the shipped Alertmanager example in a
    /// real Alertmanager, whose receivers are a webhook here. One notification, the fleet's
    /// ErrorbusScopeFailing for the API's scope; each host's own alerts on that scope (they carry
    /// it) inhibited by it, as Alertmanager itself reports them, and never notified.
    ///
    /// As with the shipped `for:` (1 min for the fleet's alert, 2 min and more for the hosts',
    /// from the incidents' start: the promtool tests prove the fleet's fires first), the test's
    /// copy keeps the fleet's alert well ahead: `for: 2s` for it, `for: 20s` for the others. An
    /// alert arriving at Alertmanager after its `group_wait` since it began is notified at once,
    /// so the fleet's must be there first; the test checks Alertmanager received it first.
    @Test func anOutageOfTheFleetIsOneNotificationAndTheHostsAlertsAreInhibited() async throws {
        let hosts = 3
        let scratch = try ScratchDirectory("prometheus-alertmanager")
        let sandbox = try await SandboxProcess(in: scratch)
        var daemons: [DaemonProcess] = []
        var prometheus: PrometheusProcess?
        var alertmanager: AlertmanagerProcess?
        do {
            try await LoopbackHTTPServer.serving(answer: { _ in .init(status: 200) }) { webhook in
                for host in 0..<hosts {
                    let daemon = try DaemonProcess(
                        directory: scratch.file("host-\(host)"),
                        baseURL: sandbox.baseURL,
                        credentials: ["client-secret": sandbox.clientSecret],
                        environment: [
                            "ERRORBUSD_METRICS_LISTEN": "127.0.0.1:0",
                            "ERRORBUSD_HEALTH_INCIDENT_AGE_WARNING": "2s",
                            "ERRORBUSD_BUS_BACKOFF_CAP": "2s",
                            "ERRORBUSD_BUS_SETTLE_WINDOW": "1s",
                        ]
                    )
                    daemons.append(daemon)
                    try await daemon.start()
                    try await daemon.waitForLog("/metrics (metrics.listen)")
                }
                let targets = try daemons.enumerated().map { host, daemon in
                    let port = try #require(MetricsIntegrationTests.port(in: daemon.log))
                    return "      - targets: ['127.0.0.1:\(port)']\n        labels: {instance: 'host-\(host)', site: 'berlin'}"
                }
                let manager = try AlertmanagerProcess(in: scratch, configuration: try Self.alertmanagerConfiguration(webhook: webhook.baseURL))
                alertmanager = manager
                let server = try PrometheusProcess(
                    in: scratch,
                    configuration: """
                        global: {scrape_interval: 1s, evaluation_interval: 1s}
                        rule_files: [errorbus-recording.yml, errorbus-alerts.yml]
                        alerting:
                          alertmanagers:
                            - static_configs: [{targets: ['\(manager.address)']}]
                        scrape_configs:
                          - job_name: errorbusd
                            static_configs:
                        \(targets.joined(separator: "\n"))
                        """,
                    rules: ["errorbus-recording.yml": try Self.rules("errorbus-recording.yml"), "errorbus-alerts.yml": try Self.rulesWithTheFleetAlertAhead()]
                )
                prometheus = server
                try await manager.start()
                try await server.start()
                try await Self.eventually(server, "errorbus:hosts_up:count", "every host scraped") { $0.first?.value == Double(hosts) }

                // The API fails every upload on every host.
                try await sandbox.fault(#"{"route":"items","mode":"status","status":503}"#)
                for (host, daemon) in daemons.enumerated() {
                    try daemon.drop("host-\(host).bin", content: Data("a file of host \(host)\n".utf8))
                }
                for daemon in daemons { try await daemon.waitForLog("incident 1 opened") }
                let scope = sandbox.baseURL
                try await Self.eventually(server, #"ALERTS{alertname="ErrorbusScopeFailing", alertstate="firing"}"#, "the fleet's alert firing") {
                    $0.count == 1 && $0.first?.labels["scope"] == scope && $0.first?.labels["category"] == "transient"
                }
                // The fleet's notification, to the pager.
                var fleet: [[String: String]] = []
                for await request in webhook.requests {
                    let alerts = Self.notifiedAlerts(request)
                    if alerts.contains(where: { $0["alertname"] == "ErrorbusScopeFailing" }) {
                        fleet = alerts
                        #expect(request.path == "/errorbus/pager", "\(request.target)")
                        break
                    }
                }
                #expect(fleet.count == 1 && fleet.first?["scope"] == scope, "\(fleet)")
                try await Self.eventually(server, #"ALERTS{alertname="ErrorbusIncidentOpenTooLong", alertstate="firing"}"#, "every host's incident alert firing") {
                    Set($0.compactMap { $0.labels["instance"] }) == Set((0..<hosts).map { "host-\($0)" })
                        && $0.allSatisfy { $0.labels["scope"] == scope && $0.labels["site"] == "berlin" }
                }

                // Alertmanager holds each host's alert suppressed, inhibited by the fleet's.
                var held: [AlertmanagerProcess.Alert] = []
                for _ in 0..<120 {
                    held = try await manager.alerts().filter { $0.labels["instance"] != nil }
                    let incidents = held.filter { $0.labels["alertname"] == "ErrorbusIncidentOpenTooLong" }
                    if Set(incidents.compactMap { $0.labels["instance"] }).count == hosts,
                       held.allSatisfy({ $0.state == "suppressed" && !$0.inhibitedBy.isEmpty }) { break }
                    try await Task.sleep(for: .seconds(1))
                }
                #expect(Set(held.filter { $0.labels["alertname"] == "ErrorbusIncidentOpenTooLong" }.compactMap { $0.labels["instance"] }).count == hosts, "\(held)")
                for alert in held {
                    #expect(alert.state == "suppressed" && !alert.inhibitedBy.isEmpty, "\(alert)")
                }

                // Each host's group of warnings (its incident alert) has been flushed twice, so
                // that its first flush's notification, or its absence, is behind it (a group's
                // flushes run in turn); nothing was sent for any host's alert.
                let flushedTwice = await manager.waitForLog { log in
                    (0..<hosts).allSatisfy { host in
                        log.split(separator: "\n").count(where: {
                            $0.contains("msg=flushing") && $0.contains(#"severity=\"warning\"}:{instance=\"host-\#(host)\""#)
                        }) >= 2
                    }
                }
                #expect(flushedTwice, "every host's group flushed twice:\n\(manager.log)")
                // The fleet's alert reached Alertmanager before any other.
                let received = manager.log.split(separator: "\n").filter { $0.contains(#"msg="Received alert""#) }
                #expect(received.first?.contains("alert=ErrorbusScopeFailing[") == true, "\(received)")
                let notified = webhook.received.flatMap(Self.notifiedAlerts)
                #expect(notified.filter { $0["instance"] != nil }.isEmpty, "a host's alert notified: \(notified)")
                #expect(notified.filter { $0["alertname"] == "ErrorbusScopeFailing" }.count == 1, "\(notified)")

                try await sandbox.clearFaults()
                for daemon in daemons { try await DirectoryWatcher.wait(for: daemon.outbox) { $0.isEmpty } }
            }
        } catch {
            for daemon in daemons { _ = try? await daemon.kill() }
            await alertmanager?.stop()
            await prometheus?.stop()
            try? await sandbox.stop()
            throw error
        }
        for daemon in daemons { try await daemon.stop().expectClean() }
        await alertmanager?.stop()
        await prometheus?.stop()
        try await sandbox.stop()
    }

    /// The labels of each alert of a webhook notification (Alertmanager's webhook JSON).
    static func notifiedAlerts(_ request: LoopbackHTTPServer.Request) -> [[String: String]] {
        let json = try? JSONSerialization.jsonObject(with: Data(request.body)) as? [String: Any]
        return (json?["alerts"] as? [[String: Any]] ?? []).map { $0["labels"] as? [String: String] ?? [:] }
    }
}
