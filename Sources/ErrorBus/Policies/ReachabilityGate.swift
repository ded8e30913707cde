/// `unreachable` (and `fatal` with a probe): hold the scope, poll the probe at a growing interval,
/// probe soon when the network changes, release everything when the probe answers.
///
/// Every wait is drawn uniformly from zero to its interval (full jitter): hosts that lost the
/// network together do not probe together. A cause on the host's side of the network (a captive
/// portal, no route, no DNS: ``ErrorBusConfiguration/Reachability/localCauses``) costs the API
/// nothing to probe, so its interval stops growing at
/// ``ErrorBusConfiguration/Reachability/localMaximumInterval``: the host notices at once that the
/// portal let it through.
package struct ReachabilityGate<Instant: InstantProtocol>: Equatable where Instant.Duration == Duration {
    typealias Action = PolicyAction<Instant>

    let configuration: ErrorBusConfiguration.Reachability
    /// The longest interval: the configured maximum, or the local one for a local cause.
    let maximumInterval: Duration
    /// The interval the next wait is drawn under.
    private(set) var interval: Duration
    /// How many probes have failed.
    private(set) var failedProbes = 0

    /// - Parameter cause: The cause of the failure that opened the incident.
    init(_ configuration: ErrorBusConfiguration.Reachability, cause: String = "") {
        self.configuration = configuration
        self.maximumInterval =
            configuration.localCauses.contains(cause)
            ? min(configuration.maximumInterval, configuration.localMaximumInterval) : configuration.maximumInterval
        self.interval = min(configuration.initialInterval, maximumInterval)
    }

    mutating func start(at now: Instant, using random: inout some RandomNumberGenerator) -> Action {
        interval = min(configuration.initialInterval, maximumInterval)
        return .wait(until: now.advanced(by: Self.jittered(interval, using: &random)), then: .probe)
    }

    mutating func stepFinished(_ result: StepResult, at now: Instant, using random: inout some RandomNumberGenerator) -> Action {
        switch result {
        case .succeeded:
            return .release
        case .failed, .rejected:
            failedProbes += 1
            interval = min(interval * configuration.factor, maximumInterval)
            return .wait(until: now.advanced(by: Self.jittered(interval, using: &random)), then: .probe)
        }
    }

    /// The network changed: whatever the schedule said, probe within
    /// ``ErrorBusConfiguration/Reachability/networkChangeSpread`` (hosts whose network changed
    /// together spread their probes over it).
    func networkChanged(at now: Instant, using random: inout some RandomNumberGenerator) -> Action {
        let spread = configuration.networkChangeSpread
        guard spread > .zero else { return .now(.probe) }
        return .wait(until: now.advanced(by: Self.jittered(spread, using: &random)), then: .probe)
    }

    /// Uniform in `0...interval`.
    static func jittered(_ interval: Duration, using random: inout some RandomNumberGenerator) -> Duration {
        .seconds(Double.random(in: 0...interval.seconds, using: &random))
    }
}
