import Testing

@testable import Sandbox

struct FaultRuleTests {
    private func rule(_ schedule: FaultSchedule, route: SandboxRoute? = nil, receivedAt: Duration = .seconds(100)) -> FaultRule {
        FaultRule(id: 1, spec: FaultSpec(mode: "down"), route: route, mode: .down(afterBytes: nil), schedule: schedule, receivedAt: receivedAt)
    }

    @Test func windowIsHalfOpen() {
        let rule = rule(FaultSchedule(after: .seconds(10), length: .seconds(5)))
        #expect(!rule.isActive(at: .milliseconds(109_999)))
        #expect(rule.isActive(at: .seconds(110)))
        #expect(rule.isActive(at: .milliseconds(114_999)))
        #expect(!rule.isActive(at: .seconds(115)))
        #expect(rule.isOver(at: .seconds(115)))
        #expect(!rule.isOver(at: .seconds(114)))
    }

    @Test func flapPhasesRepeatFromTheStart() {
        let rule = rule(FaultSchedule(flap: (on: .milliseconds(1500), off: .milliseconds(500))))
        let pattern = stride(from: 0, to: 4000, by: 250).map { rule.isActive(at: .seconds(100) + .milliseconds($0)) }
        #expect(pattern == [true, true, true, true, true, true, false, false, true, true, true, true, true, true, false, false])
        #expect(!rule.isOver(at: .seconds(1_000_000)))
    }

    @Test func allMeansTheFaultableRoutes() {
        let all = rule(FaultSchedule())
        #expect(SandboxRoute.allCases.filter(all.matches) == [.token, .items, .resources, .healthz])
        #expect(SandboxRoute.allCases.filter(rule(FaultSchedule(), route: .items).matches) == [.items])
    }

    @Test func newestActiveRuleWins() {
        var board = FaultBoard()
        _ = board.add(spec: FaultSpec(mode: "down"), route: nil, mode: .down(afterBytes: nil), schedule: FaultSchedule(), now: .zero)
        _ = board.add(spec: FaultSpec(mode: "garbage"), route: .items, mode: .garbage, schedule: FaultSchedule(length: .seconds(1)), now: .zero)
        #expect(board.activeMode(for: .items, at: .zero) == .garbage)
        #expect(board.activeMode(for: .token, at: .zero) == .down(afterBytes: nil))
        #expect(board.activeMode(for: .items, at: .seconds(1)) == .down(afterBytes: nil))
        #expect(board.rules.count == 1)
        #expect(board.activeMode(for: .other, at: .zero) == nil)
    }

    @Test(arguments: [
        ("/oauth/token", SandboxRoute.token),
        ("/oauth/token?x=1", .token),
        ("/v1/items/abc", .items),
        ("/v1/resources/motd", .resources),
        ("/healthz", .healthz),
        ("/healthz/", .other),
        ("/admin/stats", .admin),
        ("/administrator", .other),
        ("/login", .other),
    ])
    func routesAreClassifiedByPath(path: String, route: SandboxRoute) {
        #expect(SandboxRoute(path: path) == route)
    }
}
