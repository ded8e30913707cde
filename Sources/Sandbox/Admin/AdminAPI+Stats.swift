import Hummingbird
import Synchronization

extension AdminAPI {
    /// `GET /admin/stats` (`?brief` leaves out `perSecond` and `recent`).
    func stats(_ request: Request) -> Response {
        let brief = request.uri.queryParameters["brief"] != nil
        let now = state.clock.now
        let counters = state.counters.withLock { $0 }
        let items = state.items.withLock { items in
            StatsReport.Items(
                distinct: items.items.count,
                uploads: items.uploadsStored,
                duplicatesAbsorbed: items.duplicatesAbsorbed,
                keysReused: items.keysReused,
                bytes: items.bytesStored
            )
        }
        let (issued, active) = state.tokens.withLock { ($0.issued, $0.activeCount(at: now)) }
        let rules = state.faults.withLock { $0.current(at: now) }

        var byRoute: [String: [String: Int]] = [:]
        for (route, outcomes) in counters.byRoute {
            byRoute[route.rawValue] = Dictionary(uniqueKeysWithValues: outcomes.map { ($0.key.description, $0.value) })
        }
        let report = StatsReport(
            nowMs: now.milliseconds,
            requests: .init(total: counters.total, byRoute: byRoute),
            tokens: .init(requests: counters.byRoute[.token]?.values.reduce(0, +) ?? 0, issued: issued, active: active),
            items: items,
            perSecond: brief
                ? nil
                : counters.perSecond.sorted { $0.key < $1.key }.map {
                    StatsReport.Second(second: $0.key.second, route: $0.key.route.rawValue, outcome: $0.key.outcome.description, count: $0.value)
                },
            recent: brief
                ? nil
                : counters.recent.map {
                    StatsReport.Recent(ms: $0.ms, route: $0.route.rawValue, method: $0.method, outcome: $0.outcome.description)
                },
            faults: rules.map { FaultReport(rule: $0, now: now) },
            capacity: state.capacity.current.capacity == nil ? nil : state.capacity.current.counts
        )
        return Self.json(report)
    }
}
