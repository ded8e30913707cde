import Configuration
import ErrorBus
import Testing

@testable import ErrorBusDaemon

/// What a reload cannot take over is told, key by key, from the tables: every key marked as
/// taking a restart, and none other.
@Suite struct ConfigurationReloadTests {
    /// A value other than the default for every key that takes a restart. A key marked so in its
    /// table without a value here fails `everyRestartOnlyKeyIsCovered`.
    static let changes: [String: String] = [
        "api.connect-timeout": "6s",
        "api.ca-file": "/etc/ssl/extra.pem",
        "api.proxy": "http://proxy.example.net:3128",
        "api.proxy-user": "fleet",
        "api.proxy-password-file": "/etc/errorbusd/proxy-password",
        "api.no-proxy": "[.internal]",
        "auth.client-certificate-file": "/etc/errorbusd/other.crt",
        "auth.client-key-file": "/etc/errorbusd/other.key",
        "sync.outbox": "/srv/outbox",
        "state.directory": "/srv/state",
        "state.min-free-space": "32MiB",
        "log.level": "debug",
        "log.target": "stderr",
        "control.socket-path": "/run/other.sock",
        "control.group": "wheel",
        "control.max-connections": "100",
        "control.max-connections-per-user": "4",
        "metrics.listen": "127.0.0.1:9464",
        "bus.backoff.base": "500ms",
        "bus.backoff.factor": "3",
        "bus.backoff.cap": "5s",
        "bus.rate-limit.minimum": "2s",
        "bus.rate-limit.maximum": "2h",
        "bus.rate-limit.jitter": "0.25",
        "bus.reachability.initial-interval": "2s",
        "bus.reachability.factor": "3",
        "bus.reachability.maximum-interval": "1m",
        "bus.reachability.local-maximum-interval": "3s",
        "bus.reachability.network-change-spread": "2s",
        "bus.concurrency.maximum": "8",
        "bus.concurrency.initial": "2",
        "bus.concurrency.decrease": "0.7",
        "bus.concurrency.latency-tolerance": "3",
        "bus.release.spread": "1s",
        "bus.retry-budget.success-ratio": "0.2",
        "bus.retry-budget.floor-per-minute": "3",
        "bus.retry-budget.capacity": "20",
        "bus.isolation.max-attempts": "3",
        "bus.isolation.evidence": "4",
        "bus.pacing.rate": "off",
        "bus.pacing.decrease": "0.5",
        "bus.pacing.minimum-rate": "1",
        "bus.pacing.cycle-requests": "40",
        "bus.pacing.quiet": "5m",
        "bus.pacing.retry.base": "100ms",
        "bus.pacing.retry.factor": "3",
        "bus.pacing.retry.cap": "5s",
        "bus.settle-window": "1m",
        "bus.attempt-timeout": "10m",
        "bus.isolation.backoff.base": "1s",
        "bus.isolation.backoff.factor": "3",
        "bus.isolation.backoff.cap": "10m",
        "bus.max-parked-jobs": "10",
        "bus.dead-letter-grouping-window": "2m",
        "bus.event-buffer-size": "64",
        "bus.resolved-incident-history": "8",
        "bus.grouping": "per-job",
    ]

    @Test func everyRestartOnlyKeyIsCovered() {
        #expect(Set(ConfigurationKeys.table.filter(\.restart).map(\.key)) == Set(Self.changes.keys))
    }

    @Test(arguments: changes.keys.sorted())
    func aChangeOfARestartOnlyKeyIsTold(key: String) async throws {
        try await ConfigurationFixture.with { fixture in
            let environment = try fixture.credentials()
            let before = try DaemonConfiguration(reader: ConfigReader(provider: InMemoryProvider(values: [:])), environment: environment)
            let after = try DaemonConfiguration(
                reader: ConfigReader(provider: InMemoryProvider(values: [AbsoluteConfigKey(ConfigKey(key).components): .init(.string(Self.changes[key]!), isSecret: false)])),
                environment: environment
            )
            #expect(after != before)
            #expect(ReloadService.restartOnly(from: before, to: after) == [key])
        }
    }

    @Test func aChangeThatAReloadTakesIsNotTold() async throws {
        try await ConfigurationFixture.with { fixture in
            let before = try await fixture.load("")
            let after = try await fixture.load("sync:\n  concurrency: 2\nhealth:\n  parked:\n    warning: 5\napi:\n  request-timeout: 1m\n")
            #expect(after != before)
            #expect(ReloadService.restartOnly(from: before, to: after).isEmpty)
        }
    }

    /// Configurations compare by value, the bus's settings included.
    @Test func everyBusSettingCounts() {
        var changed = DaemonConfiguration()
        changed.bus.isolation.maxAttempts = 3
        #expect(changed != DaemonConfiguration())
        changed = DaemonConfiguration()
        changed.bus.reachability.localCauses.insert("elsewhere")
        #expect(changed != DaemonConfiguration())
    }
}
