import ErrorBus

// sample: probe
/// Tells the bus whether the API answers again. While an `unreachable` incident holds the API's
/// host, the bus asks this on the reachability gate's schedule: one probe for every job
/// waiting, instead of a retry each.
struct HealthProbe: ReachabilityProbe {
    let api: SimulatedAPI

    func probe(_ scope: String, kind: ErrorCategory.Kind) async -> ProbeResult {
        // It checks a host; a paused service (`fatal`) is an operator's to resume.
        guard kind == .unreachable else { return .unsupported }
        return await api.healthz() ? .reachable : .unreachable(reason: "\(scope) refused the connection")
    }
}
// end sample
