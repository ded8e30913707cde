import ArgumentParser
import DequeModule
import ErrorBus
import ErrorBusTesting
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

// errorbus-fleet-sim: thousands of errorbusd hosts on a virtual clock, driving the state the bus
// keeps per scope (the concurrency limit, the adaptive rate, the scope's recent outcomes, the retry
// budget) and its incident policies against a modelled API with errorbus-sandbox's capacity laws.
// See scripts/bench-fleet and docs/fleet.md.

/// A time on the virtual clock.
typealias Instant = TimelineInstant

/// The law by which the API refuses what it cannot take, as errorbus-sandbox's capacity sets it.
enum Law: String, ExpressibleByArgument, CaseIterable {
    /// `concurrency` requests at once, a queue of `queue`, beyond it `503` + `Retry-After`.
    case concurrency
    /// A token bucket of `per-second` holding a second's worth, no queue: `503` + `Retry-After`.
    case rate
    /// `quota-limit` requests per `quota-window` seconds, told with every answer (`RateLimit`),
    /// `429` beyond it until the window resets.
    case quota
    /// The rate law, starting at `ramp-from` of it when the API comes back and ramping up to all of
    /// it over `ramp-seconds` (a cold start).
    case ramp
}

/// What the API answered, as errorbusd categorises it.
enum Answer {
    case stored(latency: Duration, quota: (remaining: Int, reset: Duration)?)
    /// Shed for load: `503` with `Retry-After`.
    case shed(retryAfter: Duration)
    /// Beyond the quota: `429` whose `Retry-After` is the window's reset.
    case overQuota(reset: Duration)
    /// The API is down: the connection is reset.
    case reset
}

/// What is simulated: the fleet, its backlog, the outage and the API's law.
struct Options: ParsableArguments {
    @Option(help: "Hosts in the fleet.") var hosts = 10_000
    @Option(help: "Files in each host's backlog, arriving a second into the outage.") var files = 100
    @Option(help: "Seconds the API is down.") var outage: Double = 300
    @Option(help: "The API's law: concurrency, rate, quota or ramp.") var law = Law.concurrency
    @Option(help: "Requests the API serves at once (law concurrency).") var concurrency = 20
    @Option(help: "Requests that may wait for a slot; beyond, they are shed (law concurrency).") var queue = 100
    @Option(name: .customLong("service-ms"), help: "Milliseconds each request takes.") var serviceMilliseconds: Double = 50
    @Option(name: .customLong("per-second"), help: "Requests admitted per second (laws rate and ramp).") var perSecond: Double = 400
    @Option(name: .customLong("quota-limit"), help: "Requests per quota window (law quota).") var quotaLimit = 2_000
    @Option(name: .customLong("quota-window"), help: "The quota's window in seconds, counted from the outage's start (law quota).") var quotaWindow: Double = 5
    @Option(name: .customLong("ramp-from"), help: "The share of the rate the API has when it comes back (law ramp).") var rampFrom = 1.0 / 3
    @Option(name: .customLong("ramp-seconds"), help: "Seconds the API takes to ramp up to its whole rate (law ramp).") var rampSeconds: Double = 30
    @Option(name: .customLong("retry-after"), help: "The Retry-After seconds of a shed request.") var retryAfterSeconds: Double = 1
    @Option(name: .customLong("sync-concurrency"), help: "Each host's sync.concurrency.") var syncConcurrency = 16
    @Option(help: "adaptive: errorbusd's limits as they are; fixed: 16 at once and no adaptive rate (the ablation).") var system = System.adaptive
    @Option(name: .customLong("start-spread"), help: "The daemons started within this many seconds, ending 5 s before the outage.") var startSpread: Double = 600
    @Option(name: .customLong("pacing-quiet"), help: "bus.pacing's quiet, in seconds (default: the bus's).") var pacingQuiet: Double?
    @Option(name: .customLong("pacing-longest-cycle"), help: "bus.pacing's longest cycle, in seconds (default: the bus's).") var pacingLongestCycle: Double?
    @Option(help: "The random seed.") var seed: UInt64 = 1
    @Flag(help: "Prints when each host finished, with its rate and limit, and what a run that did not finish left where.") var trace = false
    @Option(help: "Seconds after the outage the run gives up.") var settle: Double = 1_800
    @Option(help: "Writes the figures and per-second series here as JSON.") var json: String?

    enum System: String, ExpressibleByArgument {
        case adaptive, fixed
    }

    var outageDuration: Duration { .seconds(outage) }
    var service: Duration { .milliseconds(serviceMilliseconds) }
    var retryAfter: Duration { .seconds(retryAfterSeconds) }
    /// When the backlog arrives, after the outage began.
    var backlogAt: Duration { .seconds(1) }
    /// The API's own time per request on top of the service time (loopback, the sandbox's work).
    var overhead: Duration { .microseconds(500) }

    func validate() throws {
        guard hosts > 0, files > 0, concurrency > 0, queue >= 0, serviceMilliseconds >= 0, perSecond > 0, quotaLimit > 0, quotaWindow > 0 else {
            throw ValidationError("hosts, files, concurrency, per-second and the quota must be positive, queue and service-ms not negative")
        }
        guard rampFrom > 0, rampFrom <= 1, rampSeconds >= 0 else {
            throw ValidationError("ramp-from must be above 0 and at most 1, ramp-seconds not negative")
        }
    }

    /// The share of the API's whole capacity it has at `offset` from the outage's start.
    func factor(at offset: Duration) -> Double {
        guard law == .ramp, offset >= outageDuration else { return 1 }
        guard rampSeconds > 0 else { return 1 }
        return rampFrom + (1 - rampFrom) * min(1, (offset - outageDuration).seconds / rampSeconds)
    }

    /// Requests a second the API serves at its whole capacity.
    var capacity: Double {
        switch law {
        case .concurrency: Double(concurrency) / service.seconds
        case .rate, .ramp: perSecond
        case .quota: Double(quotaLimit) / quotaWindow
        }
    }

    /// Requests the API can serve from its recovery until `seconds` after it.
    func served(within seconds: Double) -> Double {
        guard law == .ramp, rampSeconds > 0 else { return capacity * seconds }
        let ramping = min(seconds, rampSeconds)
        let rampServed = capacity * (rampFrom * ramping + (1 - rampFrom) * ramping * ramping / (2 * rampSeconds))
        return rampServed + capacity * max(0, seconds - rampSeconds)
    }

    /// The time from the recovery the API takes to serve `requests` at its capacity.
    func ideal(for requests: Double) -> Double {
        var low = 0.0, high = requests / (capacity * rampFrom) + 1
        for _ in 0..<60 {
            let middle = (low + high) / 2
            if served(within: middle) < requests { low = middle } else { high = middle }
        }
        return high
    }
}

/// Events in time order (a binary heap; ties in the order they were scheduled).
struct EventQueue<Event> {
    private var heap: [(at: Instant, order: UInt64, event: Event)] = []
    private var scheduled: UInt64 = 0

    var isEmpty: Bool { heap.isEmpty }

    mutating func push(_ event: Event, at: Instant) {
        scheduled += 1
        heap.append((at, scheduled, event))
        var child = heap.count - 1
        while child > 0 {
            let parent = (child - 1) / 2
            guard Self.before(heap[child], heap[parent]) else { break }
            heap.swapAt(child, parent)
            child = parent
        }
    }

    mutating func pop() -> (at: Instant, event: Event)? {
        guard !heap.isEmpty else { return nil }
        heap.swapAt(0, heap.count - 1)
        let top = heap.removeLast()
        var parent = 0
        while true {
            let left = 2 * parent + 1, right = left + 1
            var first = parent
            if left < heap.count, Self.before(heap[left], heap[first]) { first = left }
            if right < heap.count, Self.before(heap[right], heap[first]) { first = right }
            if first == parent { break }
            heap.swapAt(parent, first)
            parent = first
        }
        return (top.at, top.event)
    }

    private static func before(_ a: (at: Instant, order: UInt64, event: Event), _ b: (at: Instant, order: UInt64, event: Event)) -> Bool {
        a.at < b.at || (a.at == b.at && a.order < b.order)
    }
}

/// The API, with the sandbox's capacity laws: `concurrency` slots held `service` each and a FIFO
/// queue of `queue` (law concurrency); a token bucket holding a second's worth (laws rate, ramp);
/// a quota per window (law quota).
struct API {
    let options: Options
    var inService = 0
    var waiting = Deque<Request>()
    var tokens: Double
    var refilledAt = Instant(offset: .zero)
    var quotaWindow = 0
    var quotaUsed = 0

    init(_ options: Options) {
        self.options = options
        tokens = options.perSecond
    }

    func isDown(at now: Instant) -> Bool {
        now.offset >= .zero && now.offset < options.outageDuration
    }
}

/// One upload of a host, as the bus knows it.
struct Upload {
    let id: Int
    /// Its runs that failed.
    var failedRuns = 0
    /// How unlikely its failures are as its scope's, in decimal orders of magnitude.
    var evidence = 0.0
    var successesAtLastFailure: UInt64?
    /// Set aside on its own, and its failures on its own since.
    var isolated = false
    var ownFailures = 0

    /// A run that follows no failure of its own.
    var isFresh: Bool { failedRuns == 0 }
}

/// Why an upload runs.
enum Purpose: Equatable {
    /// Its first run, claimed from the outbox by sync.
    case first
    /// Run again by the incident of this cause (released, or its pacing back-off over).
    case retry(cause: String)
    /// The canary of the incident of this cause.
    case canary(cause: String)
    /// Set aside on its own, tried again by its own incident.
    case isolated

    var takesSlot: Bool {
        switch self {
        case .first, .retry: true
        case .canary, .isolated: false
        }
    }
}

/// A request of a host, from when it is sent until it is answered.
struct Request {
    var host: Int
    var upload: Upload
    var purpose: Purpose
    var sent: Instant
    /// The scope's successes when it started: evidence counts only failures while others succeed.
    var successesBefore: UInt64
}

/// An incident of one host: one per cause.
struct Incident {
    enum State {
        /// Its scope serves others: nothing held, refused jobs run again after a back-off.
        case pacing
        /// Holds the scope until its next step.
        case waiting
        /// Holds the scope; its canary is under way.
        case canary
        /// Its cause is gone: its jobs run again.
        case releasing
        /// Every job back; it closes after the settle window unless its cause comes back.
        case settling

        var holdsScope: Bool { self == .waiting || self == .canary }
        var releases: Bool { self == .pacing || self == .releasing }
    }

    let cause: String
    var policy: IncidentPolicy<Instant>
    var state: State
    var generation: UInt64 = 0
    /// Parked jobs that may run when it releases.
    var ready = Deque<Upload>()
    /// Jobs waiting out a pacing back-off, with when each is due.
    var delayed: [(due: Instant, upload: Upload)] = []
    /// When the wake-up for the next due job is armed for.
    var delayedWakeAt: Instant?
    /// Its jobs running again or waiting for a slot.
    var running = 0

    var isEmpty: Bool { ready.isEmpty && delayed.isEmpty && running == 0 }
}

/// One errorbusd: its outbox, its sync claims, the bus's admission for the API's scope, its
/// incidents.
struct Host {
    /// Files in the outbox not yet claimed.
    var queued = 0
    /// Claimed by sync: running or waiting for a slot (sync.concurrency at most).
    var firstRuns = 0
    /// Runs waiting for a slot: runs again before first runs.
    var waiting = Deque<(upload: Upload, purpose: Purpose)>()
    var limit: ConcurrencyLimit<Instant>
    var rate: AdaptiveRate<Instant>
    /// No slot before this (the server said its quota is spent).
    var pausedUntil: Instant?
    var wakeAt: Instant?
    var outcomes = ScopeOutcomes()
    var budget: RetryBudget<Instant>
    var incidents: [String: Incident] = [:]
    var nextUpload = 0
    var delivered = 0
    var deadLettered = 0
    var firstDelivery: Instant?
    /// Incidents opened, by cause; jobs set aside on their own.
    var opened: [String: Int] = [:]
    var isolated = 0

    var isHeld: Bool { incidents.values.contains { $0.state.holdsScope } }
}

enum Event {
    case backlog(host: Int)
    case answer(Request, Answer)
    case serviceEnd(Request)
    case step(host: Int, cause: String, generation: UInt64, step: PolicyStep)
    /// The host's rate or pause withholds slots until now.
    case wake(host: Int)
    /// Jobs of an incident's pacing back-off are due.
    case due(host: Int, cause: String)
    /// A job set aside on its own is tried again.
    case isolatedRetry(host: Int, upload: Upload)
}

/// Per second from the start of the outage: requests arriving, stored, refused for load.
struct Series: Codable {
    var arrivals: [Int] = []
    var stored: [Int] = []
    var shed: [Int] = []

    mutating func count(_ keyPath: WritableKeyPath<Series, [Int]>, at now: Instant) {
        let second = max(0, Int(now.offset.seconds))
        while self[keyPath: keyPath].count <= second { self[keyPath: keyPath].append(0) }
        self[keyPath: keyPath][second] += 1
    }
}

final class Simulation {
    let options: Options
    var configuration: ErrorBusConfiguration
    var random: SeededRandomNumberGenerator
    var events = EventQueue<Event>()
    var api: API
    var hosts: [Host]
    var series = Series()
    var requestsDuringOutage = 0
    var shedAfter = 0
    var requestsAfter = 0
    var lastDelivery: Instant?
    var now = Instant(offset: .zero)

    init(_ options: Options) {
        self.options = options
        configuration = ErrorBusConfiguration()
        if options.system == .fixed {
            configuration.concurrency = .fixed(configuration.concurrency.maximum)
            configuration.pacing.adaptsRate = false
        }
        if let quiet = options.pacingQuiet { configuration.pacing.quiet = .seconds(quiet) }
        if let cycle = options.pacingLongestCycle {
            configuration.pacing.longestCycle = .seconds(cycle)
            configuration.pacing.quiet = max(configuration.pacing.quiet, configuration.pacing.longestCycle)
        }
        random = SeededRandomNumberGenerator(seed: options.seed)
        api = API(options)
        hosts = []
        hosts.reserveCapacity(options.hosts)
        for _ in 0..<options.hosts {
            // Each daemon started at its own time before the outage: its retry budget has filled
            // since, on its own phase.
            let started = Instant(offset: .seconds(-5 - Double.random(in: 0...options.startSpread, using: &random)))
            hosts.append(Host(
                limit: ConcurrencyLimit(configuration.concurrency),
                rate: AdaptiveRate(configuration.pacing),
                budget: RetryBudget(configuration.retryBudget, at: started)
            ))
        }
        for index in hosts.indices {
            // The backlogs arrive within a second of each other.
            let jitter = Duration.seconds(Double.random(in: 0..<1, using: &random))
            events.push(.backlog(host: index), at: Instant(offset: options.backlogAt + jitter))
        }
    }

    func run() {
        let end = Instant(offset: options.outageDuration + .seconds(options.settle))
        while let (at, event) = events.pop(), at <= end {
            now = at
            switch event {
            case .backlog(let host):
                hosts[host].queued += options.files
                dispatch(host)
            case .answer(let request, let answer):
                answered(request, answer)
            case .serviceEnd(let request):
                serviceEnded(request)
            case .step(let host, let cause, let generation, let step):
                guard hosts[host].incidents[cause]?.generation == generation else { continue }
                take(step, host, cause)
            case .wake(let host):
                if let armed = hosts[host].wakeAt, armed <= now { hosts[host].wakeAt = nil }
                dispatch(host)
            case .due(let host, let cause):
                delayedDue(host, cause)
            case .isolatedRetry(let host, let upload):
                send(Request(host: host, upload: upload, purpose: .isolated, sent: now, successesBefore: hosts[host].outcomes.successes))
            }
            if isDone { break }
        }
    }

    /// What is left where, for a run that did not finish (`--trace`).
    func dumpLeftovers() {
        for (index, host) in hosts.enumerated() where host.delivered + host.deadLettered < options.files {
            let incidents = host.incidents.values.map { "\($0.cause) \($0.state) ready \($0.ready.count) delayed \($0.delayed.count) running \($0.running)" }
            print("host \(index): delivered \(host.delivered) queued \(host.queued) firstRuns \(host.firstRuns) waiting \(host.waiting.count) inFlight \(host.limit.inFlight) permits \(host.limit.permits) paused \(String(describing: host.pausedUntil)) wake \(String(describing: host.wakeAt)) incidents \(incidents)")
        }
    }

    var isDone: Bool {
        now.offset > options.outageDuration && hosts.allSatisfy { $0.delivered + $0.deadLettered == options.files }
    }

    // MARK: The API

    func send(_ request: Request) {
        series.count(\.arrivals, at: now)
        if api.isDown(at: now) {
            requestsDuringOutage += 1
            events.push(.answer(request, .reset), at: now.advanced(by: .microseconds(200)))
            return
        }
        requestsAfter += 1
        let factor = options.factor(at: now.offset)
        var quota: (remaining: Int, reset: Duration)?
        switch options.law {
        case .concurrency:
            break
        case .rate, .ramp:
            let rate = options.perSecond * factor
            api.tokens = min(max(1, rate), api.tokens + rate * api.refilledAt.duration(to: now).seconds)
            api.refilledAt = now
            guard api.tokens >= 1 else { return refuse(request, .shed(retryAfter: options.retryAfter)) }
            api.tokens -= 1
        case .quota:
            let window = Int((now.offset.seconds / options.quotaWindow).rounded(.down))
            if window != api.quotaWindow {
                api.quotaWindow = window
                api.quotaUsed = 0
            }
            // As the sandbox's RateLimit fields tell it: whole seconds, rounded up.
            let reset = Duration.seconds((Double(window + 1) * options.quotaWindow - now.offset.seconds).rounded(.up))
            guard api.quotaUsed < options.quotaLimit else { return refuse(request, .overQuota(reset: reset)) }
            api.quotaUsed += 1
            quota = (options.quotaLimit - api.quotaUsed, reset)
        }
        if options.law == .concurrency {
            let slots = max(1, Int((Double(options.concurrency) * factor).rounded()))
            if api.inService >= slots {
                guard api.waiting.count < options.queue else { return refuse(request, .shed(retryAfter: options.retryAfter)) }
                api.waiting.append(request)
                return
            }
            api.inService += 1
            events.push(.serviceEnd(request), at: now.advanced(by: options.service + options.overhead))
        } else {
            events.push(.answer(request, .stored(latency: options.service + options.overhead, quota: quota)), at: now.advanced(by: options.service + options.overhead))
        }
    }

    func refuse(_ request: Request, _ answer: Answer) {
        shedAfter += 1
        series.count(\.shed, at: now)
        events.push(.answer(request, answer), at: now.advanced(by: options.overhead))
    }

    func serviceEnded(_ request: Request) {
        // The slot goes to the oldest waiting request before the answer lets anything new in.
        if let next = api.waiting.popFirst() {
            events.push(.serviceEnd(next), at: now.advanced(by: options.service + options.overhead))
        } else {
            api.inService -= 1
        }
        answered(request, .stored(latency: request.sent.duration(to: now), quota: nil))
    }

    // MARK: A host's admission

    /// Claims first runs from the outbox while nothing holds the scope (sync leaves them in its
    /// durable queue meanwhile), then hands free slots to the runs waiting, retries first.
    func dispatch(_ host: Int) {
        while hosts[host].queued > 0, hosts[host].firstRuns < options.syncConcurrency, !hosts[host].isHeld {
            hosts[host].queued -= 1
            hosts[host].firstRuns += 1
            hosts[host].waiting.append((Upload(id: hosts[host].nextUpload), .first))
            hosts[host].nextUpload += 1
        }
        while let (upload, purpose) = hosts[host].waiting.first {
            if hosts[host].isHeld {
                // Something holds the scope: the run asks the bus, which parks it.
                hosts[host].waiting.removeFirst()
                left(host, purpose)
                park(host, upload)
                continue
            }
            guard let due = takeSlot(host) else {
                hosts[host].waiting.removeFirst()
                send(Request(host: host, upload: upload, purpose: purpose, sent: now, successesBefore: hosts[host].outcomes.successes))
                continue
            }
            if let due, hosts[host].wakeAt.map({ $0 > due }) ?? true {
                hosts[host].wakeAt = due
                events.push(.wake(host: host), at: due)
            }
            break
        }
    }

    /// Takes a slot and a token: `nil` when taken, `.some(nil)` when every slot is taken, or
    /// when the rate or a pause gives the next.
    func takeSlot(_ host: Int) -> Instant?? {
        if let until = hosts[host].pausedUntil {
            guard now >= until else { return .some(until) }
            hosts[host].pausedUntil = nil
        }
        guard hosts[host].limit.hasFreeSlot else { return .some(nil) }
        if let due = hosts[host].rate.take(at: now) { return .some(due) }
        _ = hosts[host].limit.acquire()
        return nil
    }

    /// A run no longer counts where it came from.
    func left(_ host: Int, _ purpose: Purpose) {
        switch purpose {
        case .first: hosts[host].firstRuns -= 1
        case .retry(let cause): hosts[host].incidents[cause]?.running -= 1
        case .canary, .isolated: break
        }
    }

    /// Parks a job under the incident that holds the scope.
    func park(_ host: Int, _ upload: Upload) {
        guard let cause = hosts[host].incidents.first(where: { $0.value.state.holdsScope })?.key else { return }
        hosts[host].incidents[cause]!.ready.append(upload)
    }

    // MARK: Answers

    func answered(_ request: Request, _ answer: Answer) {
        let host = request.host
        let counts = !request.upload.isolated
        if request.purpose.takesSlot {
            let outcome: ConcurrencyLimit<Instant>.Outcome =
                switch answer {
                case .stored(let latency, _): .success(latency: latency)
                case .shed, .overQuota: .overloaded
                case .reset: hosts[host].outcomes.serves ? .other : .backPressure
                }
            let queueing = hosts[host].limit.isQueueing
            hosts[host].limit.release(outcome, at: now)
            switch answer {
            case .stored: hosts[host].rate.succeeded(at: now)
            case .shed, .overQuota: queueing ? hosts[host].rate.answered(at: now) : hosts[host].rate.refused(sentAt: request.sent, at: now)
            case .reset: hosts[host].rate.answered(at: now)
            }
        } else if case .stored(let latency, _) = answer {
            hosts[host].limit.calibrate(latency)
        }
        left(host, request.purpose)
        switch answer {
        case .stored(_, let quota):
            if counts { hosts[host].outcomes.succeeded(fresh: request.upload.isFresh) }
            delivered(host)
            hosts[host].budget.deposit(successes: 1)
            if let quota { told(host, remaining: quota.remaining, reset: quota.reset) }
            switch request.purpose {
            case .canary(let cause):
                if hosts[host].incidents[cause]?.state == .canary { stepFinished(host, cause, .succeeded) }
            case .retry(let cause):
                finishRelease(host, cause)
            case .first, .isolated:
                break
            }
        case .shed(let retryAfter):
            failed(request, category: .rateLimited(retryAfter: retryAfter), cause: "http503")
        case .overQuota(let reset):
            failed(request, category: .rateLimited(retryAfter: reset), cause: "http429")
        case .reset:
            failed(request, category: .transient, cause: "connectionReset")
        }
        // A canary that did not come back with its incident's cause means the cause is gone.
        if case .canary(let cause) = request.purpose, hosts[host].incidents[cause]?.state == .canary {
            stepFinished(host, cause, .succeeded)
        }
        dispatch(host)
    }

    func delivered(_ host: Int) {
        series.count(\.stored, at: now)
        hosts[host].delivered += 1
        if hosts[host].firstDelivery == nil { hosts[host].firstDelivery = now }
        if options.trace, hosts[host].delivered == options.files {
            print("host \(host) done at \(now) rate \(String(describing: hosts[host].rate.limit(at: now))) measured \(hosts[host].rate.measured) permits \(hosts[host].limit.permits) incidents \(hosts[host].opened)")
        }
        lastDelivery = now
    }

    /// What the server said of its quota with an answer: the rate spreads it; with nothing left,
    /// nothing starts before the reset and an incident says so.
    func told(_ host: Int, remaining: Int, reset: Duration) {
        hosts[host].rate.quota(remaining: remaining, reset: reset, at: now)
        guard remaining == 0 else { return }
        let until = now.advanced(by: reset)
        hosts[host].pausedUntil = max(hosts[host].pausedUntil ?? until, until)
        let cause = ErrorBus.quotaSpentCause
        let failure = failure(.rateLimited(retryAfter: reset), cause)
        if var incident = hosts[host].incidents[cause] {
            if incident.state.holdsScope {
                if let action = incident.policy.joined(by: failure, at: now, using: &random) { return execute(action, host, &incident) }
                hosts[host].incidents[cause] = incident
                return
            }
            incident.policy = IncidentPolicy(for: failure, configuration: configuration, canProbe: false)
            return execute(incident.policy.start(with: failure, at: now, using: &random), host, &incident)
        }
        open(host, failure, pacing: false, parking: nil)
    }

    func failure(_ category: ErrorCategory, _ cause: String) -> Failure {
        Failure(category: category, scope: "api", cause: cause, service: "sync", text: OperatorText(title: cause, message: cause))
    }

    /// As the bus routes a failure: weighed as evidence against the job; unless that sets it
    /// aside, its scope's incident paces (the scope serves others) or holds the scope.
    func failed(_ request: Request, category: ErrorCategory, cause: String) {
        let host = request.host
        var upload = request.upload
        let fresh = upload.isFresh
        upload.failedRuns += 1
        let failure = failure(category, cause)
        if upload.isolated {
            let counts = hosts[host].outcomes.successes != (upload.successesAtLastFailure ?? request.successesBefore)
            upload.successesAtLastFailure = hosts[host].outcomes.successes
            return failedOnItsOwn(host, upload, failure, counts: counts)
        }
        hosts[host].outcomes.failed(fresh: fresh, cause: cause, job: upload.id)
        let recorded = hosts[host].outcomes
        upload.evidence += recorded.evidence(ofFailureWith: cause, after: upload.successesAtLastFailure ?? request.successesBefore)
        upload.successesAtLastFailure = recorded.successes
        if upload.evidence >= configuration.isolation.evidence {
            return isolate(host, upload, failure)
        }
        let paces = category.kind.paces && recorded.serves
        guard var incident = hosts[host].incidents[cause] else {
            return open(host, failure, pacing: paces, parking: upload)
        }
        if request.purpose == .canary(cause: cause), incident.state == .canary {
            incident.ready.append(upload)
            hosts[host].incidents[cause] = incident
            return stepFinished(host, cause, .failed(reason: cause, retryAfter: category.retryAfter))
        }
        if !incident.state.holdsScope {
            if paces { return pace(host, upload, failure, &incident) }
            incident.ready.append(upload)
            return execute(incident.policy.releaseInterrupted(by: failure, at: now, using: &random), host, &incident)
        }
        incident.ready.append(upload)
        if let action = incident.policy.joined(by: failure, at: now, using: &random) { return execute(action, host, &incident) }
        hosts[host].incidents[cause] = incident
    }

    func open(_ host: Int, _ failure: Failure, pacing: Bool, parking upload: Upload?) {
        var incident = Incident(
            cause: failure.cause,
            policy: IncidentPolicy(for: failure, configuration: configuration, canProbe: false),
            state: pacing ? .pacing : .waiting
        )
        hosts[host].opened[failure.cause, default: 0] += 1
        if pacing, let upload {
            return self.pace(host, upload, failure, &incident)
        }
        if let upload { incident.ready.append(upload) }
        execute(incident.policy.start(with: failure, at: now, using: &random), host, &incident)
    }

    /// The job runs again after its own back-off, no sooner than the server's hint plus jitter.
    func pace(_ host: Int, _ upload: Upload, _ failure: Failure, _ incident: inout Incident) {
        if incident.state != .pacing {
            incident.generation &+= 1
            incident.state = .pacing
        }
        var delay = Backoff(configuration.pacing.retry).delay(forAttempt: max(0, upload.failedRuns - 1), using: &random)
        if let hint = failure.category.retryAfter {
            let rateLimit = configuration.rateLimit
            let clamped = min(max(hint, rateLimit.minimum), rateLimit.maximum)
            delay = max(delay, clamped * (1 + Double.random(in: 0...rateLimit.jitter, using: &random)))
        }
        let due = now.advanced(by: delay)
        incident.delayed.append((due, upload))
        if incident.delayedWakeAt.map({ $0 > due }) ?? true {
            incident.delayedWakeAt = due
            events.push(.due(host: host, cause: incident.cause), at: due)
        }
        hosts[host].incidents[incident.cause] = incident
        unholdIfFree(host)
    }

    func delayedDue(_ host: Int, _ cause: String) {
        guard var incident = hosts[host].incidents[cause] else { return }
        incident.delayedWakeAt = nil
        var later: [(due: Instant, upload: Upload)] = []
        for entry in incident.delayed {
            if entry.due <= now { incident.ready.append(entry.upload) } else { later.append(entry) }
        }
        incident.delayed = later
        if let next = later.map(\.due).min() {
            incident.delayedWakeAt = next
            events.push(.due(host: host, cause: cause), at: next)
        }
        hosts[host].incidents[cause] = incident
        release(host, cause)
        dispatch(host)
    }

    /// Sets a job aside on its own: its own incident tries it on the isolation's back-off.
    func isolate(_ host: Int, _ upload: Upload, _ failure: Failure) {
        var upload = upload
        upload.isolated = true
        hosts[host].isolated += 1
        failedOnItsOwn(host, upload, failure, counts: true)
    }

    func failedOnItsOwn(_ host: Int, _ upload: Upload, _ failure: Failure, counts: Bool) {
        var upload = upload
        if counts { upload.ownFailures += 1 }
        if let limit = configuration.isolation.maxAttempts, upload.ownFailures >= limit {
            hosts[host].deadLettered += 1
            return
        }
        var delay = Backoff(configuration.isolation.backoff).delay(forAttempt: max(0, upload.ownFailures - 1), using: &random)
        if let hint = failure.category.retryAfter { delay = max(delay, hint) }
        events.push(.isolatedRetry(host: host, upload: upload), at: now.advanced(by: delay))
    }

    // MARK: Incidents

    func stepFinished(_ host: Int, _ cause: String, _ result: StepResult) {
        guard var incident = hosts[host].incidents[cause] else { return }
        execute(incident.policy.stepFinished(result, at: now, using: &random), host, &incident)
    }

    func execute(_ action: PolicyAction<Instant>, _ host: Int, _ incident: inout Incident) {
        incident.generation &+= 1
        let cause = incident.cause
        switch action {
        case .wait(let until, let step):
            incident.state = .waiting
            hosts[host].limit.hold()
            hosts[host].rate.hold(at: now)
            events.push(.step(host: host, cause: cause, generation: incident.generation, step: step), at: until)
            hosts[host].incidents[cause] = incident
            // Runs waiting for a slot park under it.
            dispatch(host)
        case .now(let step):
            hosts[host].incidents[cause] = incident
            take(step, host, cause)
        case .release:
            incident.state = .releasing
            hosts[host].incidents[cause] = incident
            unholdIfFree(host)
            release(host, cause)
        case .needsOperator, .hold:
            fatalError("no policy of this model waits for an operator")
        }
    }

    /// Once nothing holds the scope, its limit and rate start again.
    func unholdIfFree(_ host: Int) {
        guard !hosts[host].isHeld, hosts[host].limit.isHeld else { return }
        hosts[host].limit.resume()
        hosts[host].rate.resume(at: now)
    }

    /// Runs an incident's ready jobs again (at most the concurrency's maximum at once) while it
    /// releases or paces.
    func release(_ host: Int, _ cause: String) {
        guard var incident = hosts[host].incidents[cause], incident.state.releases else { return }
        while incident.running < configuration.concurrency.maximum, let upload = incident.ready.popFirst() {
            incident.running += 1
            // Runs again before first runs.
            let firstRun = hosts[host].waiting.firstIndex { $0.purpose == .first } ?? hosts[host].waiting.endIndex
            hosts[host].waiting.insert((upload, .retry(cause: cause)), at: firstRun)
        }
        hosts[host].incidents[cause] = incident
        settleIfEmpty(host, cause)
        dispatch(host)
    }

    /// One of an incident's jobs came back: the next ready one runs, or, all back, it settles.
    func finishRelease(_ host: Int, _ cause: String) {
        guard let incident = hosts[host].incidents[cause], incident.state.releases else { return }
        if incident.ready.isEmpty { settleIfEmpty(host, cause) } else { release(host, cause) }
    }

    /// An incident whose jobs all came back settles, and closes after the settle window.
    func settleIfEmpty(_ host: Int, _ cause: String) {
        guard var incident = hosts[host].incidents[cause], incident.state.releases, incident.isEmpty else { return }
        incident.state = .settling
        incident.generation &+= 1
        events.push(.step(host: host, cause: cause, generation: incident.generation, step: .close), at: now.advanced(by: configuration.settleWindow))
        hosts[host].incidents[cause] = incident
    }

    func take(_ step: PolicyStep, _ host: Int, _ cause: String) {
        guard var incident = hosts[host].incidents[cause] else { return }
        switch step {
        case .canary:
            guard let upload = incident.ready.first else { return stepFinished(host, cause, .succeeded) }
            guard !incident.policy.canaryDrawsOnBudget || hosts[host].budget.withdraw(at: now) else {
                incident.generation &+= 1
                events.push(.step(host: host, cause: cause, generation: incident.generation, step: .canary), at: hosts[host].budget.nextToken(after: now))
                hosts[host].incidents[cause] = incident
                return
            }
            incident.ready.removeFirst()
            incident.state = .canary
            hosts[host].incidents[cause] = incident
            send(Request(host: host, upload: upload, purpose: .canary(cause: cause), sent: now, successesBefore: hosts[host].outcomes.successes))
        case .close:
            guard incident.state == .settling else { return }
            hosts[host].incidents[cause] = nil
        case .probe, .reauthenticate:
            fatalError("no policy of this model takes \(step)")
        }
    }
}

// MARK: - Figures

extension Simulation {
    func figures() -> Figures {
        let capacity = options.capacity
        let recovery = Int(options.outageDuration.seconds)
        let after = series.arrivals.dropFirst(recovery)
        let drained = lastDelivery.map { ($0.offset - options.outageDuration).seconds }
        let delivered = hosts.reduce(0) { $0 + $1.delivered }
        let ideal = options.ideal(for: Double(options.hosts * options.files))
        let firsts = hosts.compactMap { $0.firstDelivery.map { ($0.offset - options.outageDuration).seconds } }.sorted()
        func percentile(_ p: Double) -> Double? {
            firsts.isEmpty ? nil : firsts[min(firsts.count - 1, Int(Double(firsts.count - 1) * p + 0.5))]
        }
        let opened = hosts.reduce(0) { $0 + $1.opened.values.reduce(0, +) }
        return Figures(
            system: options.system == .fixed ? "errorbusd, fixed 16 at once, no adaptive rate (ablation), simulated" : "errorbusd, simulated",
            law: options.law.rawValue,
            hosts: options.hosts,
            files: options.files,
            outage: options.outage,
            capacity: capacity,
            requestsPerHostPerMinuteDuringOutage: Double(requestsDuringOutage) / Double(options.hosts) / (options.outage / 60),
            peakArrivalsOverCapacity: Double(after.max() ?? 0) / capacity,
            shedShare: requestsAfter == 0 ? 0 : Double(shedAfter) / Double(requestsAfter),
            requestsAfterRecovery: requestsAfter,
            shedAfterRecovery: shedAfter,
            delivered: delivered,
            lost: options.hosts * options.files - delivered - hosts.reduce(0) { $0 + $1.deadLettered },
            drainSeconds: drained,
            drainOverIdeal: drained.map { $0 / ideal },
            goodputOverCapacity: drained.map { Double(delivered) / options.served(within: $0) },
            firstDeliveryP50: percentile(0.5),
            firstDeliveryP99: percentile(0.99),
            incidentsPerHost: Double(opened) / Double(options.hosts),
            mostIncidentsOfOneCause: hosts.map { $0.opened.values.max() ?? 0 }.max() ?? 0,
            incidentsByCause: hosts.reduce(into: [:]) { total, host in total.merge(host.opened, uniquingKeysWith: +) },
            isolated: hosts.reduce(0) { $0 + $1.isolated },
            deadLettered: hosts.reduce(0) { $0 + $1.deadLettered },
            series: series
        )
    }
}

/// What a run measured: the same figures as the real run of scripts/bench-fleet.
struct Figures: Codable {
    var system: String
    var law: String
    var hosts: Int
    var files: Int
    var outage: Double
    /// Requests per second the API can serve.
    var capacity: Double
    var requestsPerHostPerMinuteDuringOutage: Double
    /// The most requests arriving in one second after the recovery, over the capacity.
    var peakArrivalsOverCapacity: Double
    /// Of the requests after the recovery, the share refused for load (503, or 429 beyond a quota).
    var shedShare: Double
    var requestsAfterRecovery: Int
    var shedAfterRecovery: Int
    var delivered: Int
    var lost: Int
    /// From the recovery to the last delivery.
    var drainSeconds: Double?
    /// The drain time over the ideal: the whole backlog at the API's capacity.
    var drainOverIdeal: Double?
    /// Deliveries per second until the backlog was drained, over the capacity.
    var goodputOverCapacity: Double?
    /// From the recovery to each host's first delivery, over the hosts.
    var firstDeliveryP50: Double?
    var firstDeliveryP99: Double?
    /// Incidents the hosts opened, per host; the most one host opened of one cause; by cause.
    var incidentsPerHost: Double
    var mostIncidentsOfOneCause: Int
    var incidentsByCause: [String: Int]
    /// Jobs set aside on their own, and dead-lettered.
    var isolated: Int
    var deadLettered: Int
    var series: Series?
}

extension Duration {
    var seconds: Double {
        let (seconds, attoseconds) = components
        return Double(seconds) + Double(attoseconds) / 1e18
    }
}

@main
struct FleetSimulator: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "errorbus-fleet-sim",
        abstract: "Simulates a fleet of errorbusd hosts through an outage of one API, on a virtual clock.",
        discussion: """
            Each host keeps the state the ErrorBus keeps for a scope (the adaptive concurrency \
            limit and rate, the scope's recent outcomes that tell pacing from an outage and a job \
            failing on its own, the retry budget) and runs its incident policies, against a \
            modelled API with one of errorbus-sandbox's capacity laws. Prints the figures as \
            JSON; scripts/bench-fleet runs it.
            """
    )

    @OptionGroup var options: Options

    func run() throws {
        let simulation = Simulation(options)
        simulation.run()
        if options.trace { simulation.dumpLeftovers() }
        let figures = simulation.figures()
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        if let path = options.json {
            try encoder.encode(figures).write(to: URL(filePath: path))
        }
        var summary = figures
        summary.series = nil
        encoder.outputFormatting = [.sortedKeys, .prettyPrinted]
        print(String(decoding: try encoder.encode(summary), as: UTF8.self))
    }
}
