import AsyncHTTPClient
import ErrorBus
import ErrorBusHTTP
import ErrorBusTesting
import Foundation
import InMemoryLogging
import Logging
import NIOCore
import Testing

@testable import ErrorBusDaemon

/// The auth and loader services on a manual clock, against the sandbox over loopback: their
/// refreshes happen when the clock says, not after a wait.
@Suite(.serialized, .timeLimit(.minutes(1)))
struct ClockedServiceTests {
    static let logger = Logger(label: "clocked-tests") { _ in SwiftLogNoOpLogHandler() }

    static func auth(_ sandbox: LiveSandbox, bus: ErrorBus, clock: ManualClock, margin: Duration) -> AuthService {
        AuthService(
            settings: .init(
                tokenURL: sandbox.baseURL + "/oauth/token",
                host: "127.0.0.1",
                realm: "api",
                clientID: "errorbus",
                secret: "sandbox-secret",
                secretFix: "",
                refreshMargin: margin,
                requestTimeout: .seconds(10)
            ),
            http: RoutedHTTPClient(sandbox.client),
            bus: bus,
            clock: clock,
            logger: logger
        )
    }

    /// Requests the sandbox counted on `route` (`token`, `resources`…).
    static func requests(_ sandbox: LiveSandbox, _ route: String) async throws -> Int {
        let response = try await sandbox.client.execute(HTTPClientRequest(url: sandbox.baseURL + "/admin/stats?brief"), timeout: .seconds(10))
        let body = try await response.body.collect(upTo: 1 << 20)
        let stats = try JSONSerialization.jsonObject(with: Data(body.readableBytesView)) as? [String: Any]
        let byRoute = (stats?["requests"] as? [String: Any])?["byRoute"] as? [String: [String: Int]]
        return byRoute?[route]?.values.reduce(0, +) ?? 0
    }

    @Test func theTokenIsRenewedBetweenOneAndTwoMarginsBeforeItExpiresByTheClock() async throws {
        try await LiveSandbox.with { sandbox in
            let bus = ErrorBus(clock: ManualClock(), logger: Self.logger)
            let clock = ManualClock()
            // The sandbox's tokens live an hour; renewed one to two minutes before, at random, so
            // that hosts started together do not renew together.
            let auth = Self.auth(sandbox, bus: bus, clock: clock, margin: .seconds(60))
            try await withThrowingTaskGroup(of: Void.self) { group throws in
                group.addTask { try await auth.run() }
                defer { group.cancelAll() }
                // The first token is in once the refresh loop sleeps until its renewal.
                await clock.sleepers(atLeast: 1)
                let first = try await auth.accessToken()
                #expect(try await Self.requests(sandbox, "token") == 1)
                let renewal = try #require(clock.advanceToNextDeadline())
                #expect(renewal.offset >= .seconds(3600 - 120) && renewal.offset <= .seconds(3600 - 60), "\(renewal)")
                await clock.sleepers(atLeast: 1)
                #expect(try await Self.requests(sandbox, "token") == 2)
                #expect(try await auth.accessToken() != first)
            }
        }
    }

    @Test func renewalsOfTokensObtainedTogetherAreSpreadOverTheMargin() {
        var random = SystemRandomNumberGenerator()
        let token = AuthService.Token(value: "t", sentAt: TimelineInstant(offset: .zero), expiresAt: TimelineInstant(offset: .seconds(3600)))
        let renewals = (0..<200).map { _ in token.renewal(margin: .seconds(60), using: &random).offset }
        #expect(renewals.allSatisfy { $0 >= .seconds(3480) && $0 <= .seconds(3540) })
        // Spread, not bunched: both halves of the window are used.
        #expect(renewals.contains { $0 < .seconds(3510) } && renewals.contains { $0 > .seconds(3510) })
        // A token too short-lived for two margins is renewed no earlier than it was obtained.
        let short = AuthService.Token(value: "s", sentAt: TimelineInstant(offset: .zero), expiresAt: TimelineInstant(offset: .seconds(90)))
        #expect((0..<50).allSatisfy { _ in short.renewal(margin: .seconds(60), using: &random).offset >= .zero })
    }

    @Test func aResourceIsCheckedAgainAfterItsIntervalByTheClock() async throws {
        try await LiveSandbox.with { sandbox in
            try await StoreTestDirectory.withStore { store, state in
                let bus = ErrorBus(clock: ManualClock(), logger: Self.logger)
                let clock = ManualClock()
                let auth = Self.auth(sandbox, bus: bus, clock: ManualClock(), margin: .seconds(60))
                let directory = (state as NSString).deletingLastPathComponent + "/resources"
                try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: false)
                let loader = LoaderService(
                    settings: .init(
                        directory: directory,
                        resources: [.init(name: "motd", url: sandbox.baseURL + "/v1/resources/motd", interval: .seconds(300))],
                        realm: "api",
                        requestTimeout: .seconds(10)
                    ),
                    store: store,
                    bus: bus,
                    auth: auth,
                    http: RoutedHTTPClient(sandbox.client),
                    clock: clock,
                    logger: Self.logger
                )
                try await withThrowingTaskGroup(of: Void.self) { group throws in
                    group.addTask { await bus.run() }
                    group.addTask { try await loader.run() }
                    defer { group.cancelAll() }
                    // Fetched once at start; the loop then sleeps out the interval.
                    await clock.sleepers(atLeast: 1)
                    #expect(try await Self.requests(sandbox, "resources") == 1)
                    #expect(FileManager.default.fileExists(atPath: directory + "/motd"))
                    clock.advance(by: .seconds(300))
                    await clock.sleepers(atLeast: 1)
                    // Checked again, conditionally: the sandbox answered 304.
                    #expect(try await Self.requests(sandbox, "resources") == 2)
                    #expect(await loader.states["motd"]?.etag != nil)
                }
            }
        }
    }

    /// A resource that answers 404 and was never fetched says so, once and not at every
    /// interval; one with a copy says it keeps it.
    @Test func aResourceNeverFetchedSaysSoOnceNotAtEveryInterval() async throws {
        try await LiveSandbox.with { sandbox in
            try await StoreTestDirectory.withStore { store, state in
                let bus = ErrorBus(clock: ManualClock(), logger: Self.logger)
                let clock = ManualClock()
                let auth = Self.auth(sandbox, bus: bus, clock: ManualClock(), margin: .seconds(60))
                let directory = (state as NSString).deletingLastPathComponent + "/resources"
                try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: false)
                let logs = InMemoryLogHandler()
                let loader = LoaderService(
                    settings: .init(
                        directory: directory,
                        resources: [
                            .init(name: "missing", url: sandbox.baseURL + "/v1/resources/missing", interval: .seconds(300)),
                            .init(name: "motd", url: sandbox.baseURL + "/v1/resources/motd", interval: .seconds(300)),
                        ],
                        realm: "api",
                        requestTimeout: .seconds(10)
                    ),
                    store: store,
                    bus: bus,
                    auth: auth,
                    http: RoutedHTTPClient(sandbox.client),
                    clock: clock,
                    logger: Logger(label: "loader") { _ in logs }
                )
                let warnings = { (name: String) in
                    logs.entries.filter { $0.level == .warning }.map(\.message.description).filter { $0.hasPrefix("resource \(name) ") }
                }
                try await withThrowingTaskGroup(of: Void.self) { group throws in
                    group.addTask { await bus.run() }
                    group.addTask { try await loader.run() }
                    defer { group.cancelAll() }
                    await clock.sleepers(atLeast: 2)
                    #expect(warnings("missing").count == 1)
                    #expect(warnings("missing").first?.hasPrefix("resource missing never fetched, there is no copy of it: ") == true, "\(warnings("missing"))")
                    #expect(warnings("motd").isEmpty)
                    #expect(await loader.states["missing"]?.lastProblem?.hasPrefix("never fetched, there is no copy of it: ") == true)
                    #expect(await loader.states["motd"]?.lastProblem == nil)

                    // The same answer at the next interval is not told again.
                    clock.advance(by: .seconds(300))
                    await clock.sleepers(atLeast: 2)
                    #expect(try await Self.requests(sandbox, "resources") == 4)
                    #expect(warnings("missing").count == 1, "\(warnings("missing"))")

                    // A resource with a copy keeps it, and says so.
                    try await sandbox.fault(#"{"route":"resources","mode":"status","status":404}"#)
                    clock.advance(by: .seconds(300))
                    await clock.sleepers(atLeast: 2)
                    #expect(warnings("motd").count == 1, "\(warnings("motd"))")
                    #expect(warnings("motd").first?.hasPrefix("resource motd not refreshed, keeping the last good copy: ") == true, "\(warnings("motd"))")
                    #expect(FileManager.default.fileExists(atPath: directory + "/motd"))
                }
            }
        }
    }
}
