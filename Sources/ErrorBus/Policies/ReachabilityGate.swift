/// `unreachable` (and `fatal` with a probe): hold the scope, poll the probe at a growing interval,
/// probe at once when the network changes, release everything when the probe answers.
struct ReachabilityGate<Instant: InstantProtocol>: Equatable where Instant.Duration == Duration {
    typealias Action = PolicyAction<Instant>

    let configuration: ErrorBusConfiguration.Reachability
    /// The wait before the next probe.
    private(set) var interval: Duration
    /// How many probes have failed.
    private(set) var failedProbes = 0

    init(_ configuration: ErrorBusConfiguration.Reachability) {
        self.configuration = configuration
        self.interval = configuration.initialInterval
    }

    mutating func start(at now: Instant) -> Action {
        interval = configuration.initialInterval
        return .wait(until: now.advanced(by: interval), then: .probe)
    }

    mutating func stepFinished(_ result: StepResult, at now: Instant) -> Action {
        switch result {
        case .succeeded:
            return .release
        case .failed, .rejected:
            failedProbes += 1
            interval = min(interval * configuration.factor, configuration.maximumInterval)
            return .wait(until: now.advanced(by: interval), then: .probe)
        }
    }

    /// The network changed: whatever the schedule said, probe now.
    func networkChanged() -> Action {
        .now(.probe)
    }
}
