@testable import ErrorBusDaemon
import ErrorBus
import ErrorBusControl
import Testing

/// The health verdict: each measure against its levels, the worst one wins, and the summary says
/// what is wrong in the administrator's own units.
@Suite struct HealthVerdictTests {
    typealias Measures = HealthMonitor.Measures
    static let levels = DaemonConfiguration.Health()

    static func healthy() -> Measures {
        Measures(oldestJob: nil, parked: 0, deadLetters: 0, oldestIncident: nil, freeSpace: 50 << 30)
    }

    @Test func nothingWrongIsOK() {
        let health = HealthMonitor.evaluate(Self.healthy(), levels: Self.levels)
        #expect(health.status == .ok)
        #expect(health.summary == "no job waiting, 0 parked, no open incident")
        #expect(health.checks.map(\.name) == ["oldest-job", "parked", "dead-letters", "needs-operator", "incident-age", "not-delivering", "refused", "free-space"])
    }

    /// Work that waits while nothing is delivered is a warning within a minute, long before the
    /// oldest job's or an incident's age are.
    @Test func workWaitingWhileNothingIsDeliveredIsAWarningWithinAMinute() {
        var measures = Self.healthy()
        measures.oldestJob = .seconds(75)
        measures.waiting = 51
        measures.notDelivering = .seconds(59)
        #expect(HealthMonitor.evaluate(measures, levels: Self.levels).status == .ok)
        measures.notDelivering = .seconds(75)
        let health = HealthMonitor.evaluate(measures, levels: Self.levels)
        #expect(health.status == .warning)
        #expect(health.summary == "nothing delivered for 75 s while 51 files wait (warning from 1m)", "\(health.summary)")
        measures.notDelivering = .seconds(15 * 60)
        #expect(HealthMonitor.evaluate(measures, levels: Self.levels).status == .critical)
    }

    @Test func eachMeasureReachesItsLevels() {
        var measures = Self.healthy()
        measures.oldestJob = .seconds(20 * 60)
        var health = HealthMonitor.evaluate(measures, levels: Self.levels)
        #expect(health.status == .warning)
        #expect(health.summary == "oldest job waiting 20 min (warning from 15m)")

        measures.deadLetters = 100
        health = HealthMonitor.evaluate(measures, levels: Self.levels)
        #expect(health.status == .critical)
        #expect(health.summary == "100 dead letters wait for an operator (critical from 100); oldest job waiting 20 min (warning from 15m)")

        measures = Self.healthy()
        measures.freeSpace = 500 << 20
        health = HealthMonitor.evaluate(measures, levels: Self.levels)
        #expect(health.status == .warning)
        #expect(health.summary.contains("500 MiB free for the store (warning at or below 1GiB)"), "\(health.summary)")

        measures.freeSpace = 100 << 20
        #expect(HealthMonitor.evaluate(measures, levels: Self.levels).status == .critical)
    }

    /// A small file system (a 64 MiB one for the state) is not critical for ever, even empty:
    /// each level is the lower of its size and its percentage of the file system's size. A large
    /// one keeps the sizes.
    @Test func freeSpaceLevelsScaleWithTheFileSystem() throws {
        var measures = Self.healthy()
        measures.fileSystemSize = 64 << 20
        measures.freeSpace = 60 << 20
        var health = HealthMonitor.evaluate(measures, levels: Self.levels)
        #expect(health.status == .ok, "\(health.summary)")
        let check = try #require(health.checks.first { $0.name == "free-space" })
        #expect(check.warning == Double((64 << 20) / 10), "10 % of 64 MiB")
        #expect(check.critical == Double((64 << 20) / 20), "5 % of 64 MiB")
        measures.freeSpace = 3 << 20
        health = HealthMonitor.evaluate(measures, levels: Self.levels)
        #expect(health.status == .critical, "\(health.summary)")

        // 1 TiB: the sizes are the lower.
        measures.fileSystemSize = 1 << 40
        measures.freeSpace = 500 << 20
        health = HealthMonitor.evaluate(measures, levels: Self.levels)
        #expect(health.status == .warning)
        #expect(health.summary.contains("500 MiB free for the store (warning at or below 1GiB)"), "\(health.summary)")

        // Without percentages, the sizes alone, as set.
        var levels = Self.levels
        levels.freeSpacePercent = .init(warning: nil, critical: nil)
        measures.fileSystemSize = 64 << 20
        measures.freeSpace = 60 << 20
        #expect(HealthMonitor.evaluate(measures, levels: levels).status == .critical)
    }

    /// A host whose API refuses much of its work, while an incident paces it, says so however
    /// much gets through: a trickle is not healthy delivery.
    @Test func aPacedHostDeliveringAFractionOfItsPaceIsAWarning() {
        var measures = Self.healthy()
        measures.refused = 9
        measures.pacing = IncidentID(rawValue: 3)
        #expect(HealthMonitor.evaluate(measures, levels: Self.levels).status == .ok, "a few percent refused is pacing as it should be")
        measures.refused = 31
        let health = HealthMonitor.evaluate(measures, levels: Self.levels)
        #expect(health.status == .warning)
        #expect(health.summary == "the API refused 31 % of the latest uploads (incident 3 paces them) (warning from 10 %)", "\(health.summary)")
        measures.refused = 90
        #expect(HealthMonitor.evaluate(measures, levels: Self.levels).status == .critical)
    }

    /// An incident that waits for an operator is critical at once by default: nothing more
    /// happens to its work until someone acts.
    @Test func anIncidentWaitingForAnOperatorIsCritical() throws {
        var measures = Self.healthy()
        let ok = HealthMonitor.evaluate(measures, levels: Self.levels)
        #expect(try #require(ok.checks.first { $0.name == "needs-operator" }).text == "no incident needs an operator")
        measures.needingOperator = [.init(id: IncidentID(rawValue: 4), title: "Credentials rejected")]
        var health = HealthMonitor.evaluate(measures, levels: Self.levels)
        #expect(health.status == .critical)
        #expect(health.summary == "1 incident needs an operator (incident 4: Credentials rejected) (critical from 1)", "\(health.summary)")
        let check = try #require(health.checks.first { $0.name == "needs-operator" })
        #expect(check.value == 1 && check.warning == 1 && check.critical == 1)

        measures.needingOperator.append(.init(id: IncidentID(rawValue: 7), title: "Client certificate refused"))
        health = HealthMonitor.evaluate(measures, levels: Self.levels)
        #expect(health.summary == "2 incidents need an operator (incidents 4, 7) (critical from 1)", "\(health.summary)")

        var levels = Self.levels
        levels.needsOperator = .init(warning: 1, critical: 3)
        #expect(HealthMonitor.evaluate(measures, levels: levels).status == .warning)
        levels.needsOperator = .init(warning: nil, critical: nil)
        #expect(HealthMonitor.evaluate(measures, levels: levels).status == .ok)
    }

    @Test func aLevelSetToNothingIsNotChecked() {
        var levels = Self.levels
        levels.parked = .init(warning: nil, critical: nil)
        var measures = Self.healthy()
        measures.parked = 1_000_000
        #expect(HealthMonitor.evaluate(measures, levels: levels).status == .ok)
        #expect(HealthMonitor.evaluate(measures, levels: Self.levels).status == .critical)
    }

    @Test func theStatusLineStartsWithTheVerdict() {
        let ok = HealthMonitor.evaluate(Self.healthy(), levels: Self.levels)
        var measures = Self.healthy()
        measures.parked = 1_500
        let warning = HealthMonitor.evaluate(measures, levels: Self.levels)
        #expect(StatusLine.render(ok, then: "running, no open incident") == "OK: running, no open incident")
        #expect(StatusLine.render(warning, then: "running, no open incident") == "WARNING: 1500 parked (warning from 1000); running, no open incident")
    }
}

