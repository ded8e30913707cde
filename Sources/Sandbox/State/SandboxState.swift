import Logging
import Synchronization

/// Everything the sandbox knows, shared by the connection handler, the API and the admin API.
///
/// Each concern has its own lock so a request touches several short critical sections and never
/// holds two locks at once. ``faults`` is the one source of truth for fault modes.
final class SandboxState: Sendable {
    let configuration: SandboxConfiguration
    let clock: SandboxClock
    /// Installed fault rules.
    let faults = Mutex(FaultBoard())
    /// Issued access tokens.
    let tokens = Mutex(TokenStore())
    /// Uploaded items and seen idempotency keys.
    let items = Mutex(ItemStore())
    /// Named resources.
    let resources: Mutex<ResourceStore>
    /// Request counters.
    let counters: Mutex<RequestCounters>
    /// What the API can take (``CapacitySpec``); unlimited until set. `/admin/reset` keeps it.
    let capacity = CapacityLimiter()
    /// One debug line per counted request, so a test can wait for requests as they happen.
    let logger: Logger

    init(configuration: SandboxConfiguration, clock: SandboxClock, logger: Logger) {
        self.configuration = configuration
        self.clock = clock
        self.logger = logger
        self.resources = Mutex(ResourceStore(seeds: configuration.resources))
        self.counters = Mutex(RequestCounters(recentCapacity: configuration.recentRequestCapacity))
        // Checked by whoever made the configuration (`CapacitySpec(json:)`); a spec that does not
        // compile leaves the API unlimited.
        self.capacity.set(try? configuration.capacity?.capacity(setAt: clock.now), at: clock.now)
    }

    /// The fault mode in force for `route` at `now`, if any.
    func activeFault(for route: SandboxRoute, at now: Duration) -> FaultMode? {
        faults.withLock { $0.activeMode(for: route, at: now) }
    }

    /// Counts a request.
    func record(route: SandboxRoute, method: String, outcome: RequestOutcome, arrival: Duration) {
        counters.withLock { $0.record(route: route, method: method, outcome: outcome, arrival: arrival) }
        logger.debug("request \(method) \(route.rawValue) \(outcome)")
    }

    /// Clears faults, counters and stored items (tokens and resources stay).
    func reset() {
        _ = faults.withLock { $0.removeAll() }
        counters.withLock { $0.removeAll() }
        items.withLock { $0.removeAll() }
    }
}
