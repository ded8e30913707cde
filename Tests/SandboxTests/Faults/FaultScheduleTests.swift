import AsyncHTTPClient
import ErrorBusTesting
import NIOCore
import NIOHTTP1
import Testing

@testable import Sandbox

/// Scheduled faults and slow answers, on a manual clock: no test waits real seconds.
@Suite(.timeLimit(.minutes(1)))
struct FaultScheduleTests {
    /// Whether `/healthz` is answered (true) or reset (false).
    private static func healthzAnswers(_ sandbox: RunningSandbox) async -> Bool {
        (try? await sandbox.send(.GET, "/healthz").status == 204) ?? false
    }

    @Test func aFaultWithForClearsItself() async throws {
        let clock = ManualClock()
        try await RunningSandbox.with(clock: SandboxClock(clock)) { sandbox in
            try await sandbox.fault(#"{"route":"all","mode":"down","for":30}"#)
            #expect(await Self.healthzAnswers(sandbox) == false)
            clock.advance(by: .seconds(29))
            #expect(await Self.healthzAnswers(sandbox) == false)
            clock.advance(by: .seconds(1))
            #expect(await Self.healthzAnswers(sandbox) == true)
            let faults = try await sandbox.send(.GET, "/admin/faults").json(AdminAPI.FaultList.self)
            #expect(faults.faults.isEmpty)
            #expect(faults.nowMs == 30_000)
        }
    }

    /// A fault for a share of requests, as one bad backend of several behind a balancer: about
    /// that share of the requests meet it, the others are served.
    @Test func aFaultForAShareOfRequestsMeetsAboutThatShare() async throws {
        try await RunningSandbox.with { sandbox in
            try await sandbox.fault(#"{"route":"healthz","mode":"status","status":502,"share":0.25}"#)
            var failed = 0
            for _ in 0..<400 where try await sandbox.send(.GET, "/healthz").status == 502 { failed += 1 }
            #expect((60...140).contains(failed), "\(failed) of 400")
            let refused = try await sandbox.send(.POST, "/admin/faults", body: ByteBuffer(string: #"{"mode":"down","share":1.5}"#))
            #expect(refused.status == 400)
        }
    }

    @Test func afterDelaysTheStart() async throws {
        let clock = ManualClock()
        try await RunningSandbox.with(clock: SandboxClock(clock)) { sandbox in
            let report = try await sandbox.fault(#"{"route":"healthz","mode":"down","after":10,"for":5}"#).json(FaultReport.self)
            #expect(report.startsAtMs == 10_000)
            #expect(report.endsAtMs == 15_000)
            #expect(report.active == false)
            #expect(await Self.healthzAnswers(sandbox) == true)
            clock.advance(by: .seconds(10))
            #expect(await Self.healthzAnswers(sandbox) == false)
            clock.advance(by: .seconds(5))
            #expect(await Self.healthzAnswers(sandbox) == true)
        }
    }

    @Test func flapAlternatesDownAndUpUntilItsEnd() async throws {
        let clock = ManualClock()
        try await RunningSandbox.with(clock: SandboxClock(clock)) { sandbox in
            try await sandbox.fault(#"{"route":"healthz","mode":"down","flap":{"on":5,"off":10},"for":60}"#)
            // (seconds since the fault was set, whether /healthz answers)
            let expected: [(Int, Bool)] = [(0, false), (4, false), (5, true), (14, true), (15, false), (20, true), (45, false), (59, true), (60, true), (75, true)]
            var now = 0
            for (second, answers) in expected {
                clock.advance(by: .seconds(second - now))
                now = second
                #expect(await Self.healthzAnswers(sandbox) == answers, "at \(second) s")
            }
        }
    }

    @Test func slowHoldsTheAnswerBack() async throws {
        let clock = ManualClock()
        try await RunningSandbox.with(clock: SandboxClock(clock)) { sandbox in
            try await sandbox.fault(#"{"route":"healthz","mode":"slow","delayMs":2000}"#)
            async let answer = sandbox.send(.GET, "/healthz")
            await clock.sleepers(atLeast: 1)
            clock.advance(by: .milliseconds(2000))
            #expect(try await answer.status == 204)
            let recent = try #require(try await sandbox.stats().recent)
            #expect(recent.map(\.ms) == [0])
        }
    }

    @Test func slowWithTrickleSendsTheHeadAtOnceAndTheBodyOverTime() async throws {
        let clock = ManualClock()
        try await RunningSandbox.with(clock: SandboxClock(clock)) { sandbox in
            let token = try await sandbox.token()
            try await sandbox.fault(#"{"route":"resources","mode":"slow","delayMs":1600,"trickle":true}"#)
            var request = HTTPClientRequest(url: sandbox.baseURL + "/v1/resources/motd")
            request.headers.add(name: "Authorization", value: "Bearer \(token)")
            let response = try await sandbox.client.execute(request, timeout: .seconds(30))
            #expect(response.status.code == 200)
            async let body = response.body.collect(upTo: 1024)
            // 33 bytes in 16 pieces of 3: 11 pieces, each after 100 ms.
            for _ in 0..<11 {
                await clock.sleepers(atLeast: 1)
                clock.advance(by: .milliseconds(100))
            }
            #expect(String(buffer: try await body) == "Welcome to the errorbus sandbox.\n")
            #expect(clock.now.offset == .milliseconds(1100))
        }
    }

    @Test func countersKeepPerSecondAndRecentRequests() async throws {
        let clock = ManualClock()
        try await RunningSandbox.with(clock: SandboxClock(clock)) { sandbox in
            clock.advance(by: .milliseconds(500))
            _ = try await sandbox.send(.GET, "/healthz")
            _ = try await sandbox.send(.GET, "/healthz")
            clock.advance(by: .milliseconds(700))
            try await sandbox.fault(#"{"route":"healthz","mode":"status","status":503}"#)
            _ = try await sandbox.send(.GET, "/healthz")
            _ = try await sandbox.send(.GET, "/nowhere")

            let stats = try await sandbox.stats()
            #expect(stats.requests.total == 4)
            #expect(stats.requests.byRoute == ["healthz": ["204": 2, "503": 1], "other": ["404": 1]])
            #expect(
                stats.perSecond == [
                    .init(second: 0, route: "healthz", outcome: "204", count: 2),
                    .init(second: 1, route: "healthz", outcome: "503", count: 1),
                    .init(second: 1, route: "other", outcome: "404", count: 1),
                ]
            )
            #expect(stats.recent?.map(\.ms) == [500, 500, 1200, 1200])
            #expect(stats.faults.count == 1)

            let brief = try await sandbox.send(.GET, "/admin/stats?brief").json(StatsReport.self)
            #expect(brief.perSecond == nil && brief.recent == nil)

            #expect(try await sandbox.send(.POST, "/admin/reset").status == 204)
            let cleared = try await sandbox.stats()
            #expect(cleared.requests.total == 0)
            #expect(cleared.faults.isEmpty)
            #expect(cleared.perSecond == [])
            #expect(try await sandbox.send(.GET, "/healthz").status == 204)
        }
    }
}
