import DequeModule
import Synchronization

/// Applies the API's ``Capacity`` to the requests of its routes: each takes a token (when a rate
/// is set) and a slot (when a concurrency is set), waiting in a queue for a slot while the queue
/// has room; a request that finds no token, or a full queue, is shed.
final class CapacityLimiter: Sendable {
    /// What became of a request.
    enum Admission: Equatable {
        /// It holds a slot: answer it, then ``release()``; with the quota, if one is set, for the
        /// answer's `RateLimit` fields.
        case admitted(Quota?)
        /// Shed: answer 503 with this `Retry-After`.
        case shed(retryAfter: Int)
        /// Beyond the quota: answer 429 with its fields, and a `Retry-After` of its reset.
        case overQuota(Quota)
        /// No capacity is set for its route.
        case unlimited
    }

    /// What an answer tells of the quota.
    struct Quota: Equatable {
        var limit: Int
        var remaining: Int
        /// Until the window ends.
        var reset: Duration
        var window: Duration
    }

    /// How the limiter stands, for `/admin/stats` and `/admin/capacity`.
    struct Counts: Codable, Sendable, Equatable {
        /// Requests holding a slot now.
        var inService = 0
        /// Requests waiting for a slot now.
        var waiting = 0
        /// The most requests that held a slot at once.
        var peakInService = 0
        /// Requests admitted since the capacity was set.
        var admitted = 0
        /// Requests shed since the capacity was set.
        var shed = 0
    }

    private struct State {
        var capacity: Capacity?
        var counts = Counts()
        var tokens = 0.0
        var refilledAt = Duration.zero
        var waiters = Deque<CheckedContinuation<Admission, Never>>()
        /// The quota's window under way, and the requests it counted.
        var quotaWindow = 0
        var quotaUsed = 0

        /// Counts a request taking a slot.
        mutating func take() {
            counts.inService += 1
            counts.admitted += 1
            counts.peakInService = max(counts.peakInService, counts.inService)
        }
    }

    private let state = Mutex(State())

    /// Sets the capacity (nil: unlimited) at `now`; requests waiting for a slot are admitted.
    func set(_ capacity: Capacity?, at now: Duration) {
        let woken = state.withLock { state in
            state.capacity = capacity
            state.counts = Counts(inService: state.counts.inService)
            state.tokens = capacity?.perSecond(at: now) ?? 0
            state.refilledAt = now
            state.quotaWindow = 0
            state.quotaUsed = 0
            let woken = Array(state.waiters)
            state.waiters.removeAll()
            state.counts.inService += woken.count
            state.counts.admitted += woken.count
            return woken
        }
        for continuation in woken { continuation.resume(returning: .admitted(nil)) }
    }

    /// The capacity in force and the counts.
    var current: (capacity: Capacity?, counts: Counts) {
        state.withLock { ($0.capacity, $0.counts) }
    }

    /// Admits a request of `route` that arrived at `now`, waiting for a slot if it must.
    func admit(_ route: SandboxRoute, at now: Duration) async -> Admission {
        await withCheckedContinuation { (continuation: CheckedContinuation<Admission, Never>) in
            // Decided and queued under one lock: a slot freed meanwhile cannot be missed.
            let decided: Admission? = state.withLock { state in
                guard let capacity = state.capacity, capacity.routes.contains(route) else { return .unlimited }
                var told: Quota?
                if let quota = capacity.quota {
                    let window = Int((now - quota.start) / quota.window)
                    if window != state.quotaWindow {
                        state.quotaWindow = window
                        state.quotaUsed = 0
                    }
                    let reset = quota.start + quota.window * (window + 1) - now
                    guard state.quotaUsed < quota.limit else {
                        state.counts.shed += 1
                        return .overQuota(Quota(limit: quota.limit, remaining: 0, reset: reset, window: quota.window))
                    }
                    state.quotaUsed += 1
                    told = Quota(limit: quota.limit, remaining: quota.limit - state.quotaUsed, reset: reset, window: quota.window)
                }
                if let rate = capacity.perSecond(at: now) {
                    state.tokens = min(max(1, rate), state.tokens + rate * ((now - state.refilledAt) / .seconds(1)))
                    state.refilledAt = now
                    guard state.tokens >= 1 else {
                        state.counts.shed += 1
                        return .shed(retryAfter: capacity.retryAfter)
                    }
                    state.tokens -= 1
                }
                guard let slots = capacity.concurrency(at: now), state.counts.inService >= slots else {
                    state.take()
                    return .admitted(told)
                }
                guard state.waiters.count < capacity.queue else {
                    state.counts.shed += 1
                    return .shed(retryAfter: capacity.retryAfter)
                }
                state.waiters.append(continuation)
                state.counts.waiting = state.waiters.count
                return nil
            }
            if let decided { continuation.resume(returning: decided) }
        }
    }

    /// How long an admitted request holds its slot before it is answered.
    var service: Duration {
        state.withLock { $0.capacity?.service ?? .zero }
    }

    /// Frees an admitted request's slot, and gives it to the oldest waiter if the capacity at
    /// `now` allows.
    func release(at now: Duration) {
        let woken: CheckedContinuation<Admission, Never>? = state.withLock { state in
            state.counts.inService -= 1
            guard !state.waiters.isEmpty else { return nil }
            if let slots = state.capacity?.concurrency(at: now), state.counts.inService >= slots { return nil }
            let waiter = state.waiters.removeFirst()
            state.counts.waiting = state.waiters.count
            state.take()
            return waiter
        }
        woken?.resume(returning: .admitted(nil))
    }
}
