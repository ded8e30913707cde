import ArgumentParser
import DequeModule
import ErrorBus
import ErrorBusTesting
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

// errorbus-fleet-sim: thousands of errorbusd hosts on a virtual clock, driving the policy state
// machines the bus runs (incident policies with back-off and jitter, the retry budget, the
// adaptive concurrency limit) against a modelled API with the sandbox's capacity law.
// See scripts/bench-fleet and docs/fleet.md.

/// A time on the virtual clock.
typealias Instant = TimelineInstant

/// What a request is for.
enum Purpose {
    case first, released, canary
}

/// What the API answered, as errorbusd categorises it.
enum Answer {
    case stored(latency: Duration)
    /// The capacity limiter shed it: 503 with Retry-After.
    case shed(retryAfter: Duration)
    /// The API is down: the connection is reset.
    case reset
}

/// What is simulated: the fleet, its backlog, the outage and the API's capacity.
struct Options: ParsableArguments {
    @Option(help: "Hosts in the fleet.") var hosts = 10_000
    @Option(help: "Files in each host's backlog, arriving a second into the outage.") var files = 100
    @Option(help: "Seconds the API is down.") var outage: Double = 300
    @Option(help: "Requests the API serves at once.") var concurrency = 20
    @Option(help: "Requests that may wait for a slot; beyond, they are shed.") var queue = 100
    @Option(name: .customLong("service-ms"), help: "Milliseconds each request holds its slot.") var serviceMilliseconds: Double = 50
    @Option(name: .customLong("per-second"), help: "Requests admitted per second (unlimited when absent).") var perSecond: Double?
    @Option(name: .customLong("retry-after"), help: "The Retry-After seconds of a shed request.") var retryAfterSeconds: Double = 1
    @Option(name: .customLong("sync-concurrency"), help: "Each host's sync.concurrency.") var syncConcurrency = 16
    @Option(help: "adaptive: errorbusd's adaptive limit; fixed: 16 at once, as before it (the ablation).") var system = System.adaptive
    @Option(name: .customLong("start-spread"), help: "The daemons started within this many seconds, ending 5 s before the outage.") var startSpread: Double = 600
    @Option(help: "The random seed.") var seed: UInt64 = 1
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
        guard hosts > 0, files > 0, concurrency > 0, queue >= 0, serviceMilliseconds > 0 else {
            throw ValidationError("hosts, files, concurrency and service-ms must be positive, queue not negative")
        }
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

/// The API, with the sandbox's capacity law: `concurrency` slots held `service` each, a FIFO
/// queue of `queue` requests waiting for one, a token bucket of `perSecond` holding a second's
/// worth; a request finding no token or a full queue is shed with 503 and Retry-After.
struct API {
    let options: Options
    var inService = 0
    var waiting = Deque<(host: Int, purpose: Purpose, sent: Instant)>()
    var tokens: Double
    var refilledAt = Instant(offset: .zero)

    init(_ options: Options) {
        self.options = options
        tokens = options.perSecond ?? 0
    }

    func isDown(at now: Instant) -> Bool {
        now.offset >= .zero && now.offset < options.outageDuration
    }
}

/// The incident a host has open: its policy, what it waits for, its parked jobs.
struct Incident {
    enum State { case waiting, canary, releasing }
    var policy: IncidentPolicy<Instant>
    var cause: String
    var state = State.waiting
    var generation: UInt64 = 0
    /// Released jobs under way.
    var releasing = 0
}

/// One errorbusd: its sync dispatcher, its bus's incident, retry budget and concurrency limit.
struct Host {
    var queued = 0
    /// First runs under way or waiting for a slot (sync.concurrency of them at most).
    var firstRuns = 0
    var waitingFirst = 0
    var parked = 0
    var incident: Incident?
    var limit: ConcurrencyLimit<Instant>
    var budget: RetryBudget<Instant>
    var delivered = 0
    var firstDelivery: Instant?
}

enum Event {
    case backlog(host: Int)
    case answer(host: Int, purpose: Purpose, answer: Answer, sent: Instant)
    case serviceEnd(host: Int, purpose: Purpose, sent: Instant)
    case step(host: Int, generation: UInt64, step: PolicyStep)
}

/// Per second from the start of the outage: requests arriving, stored, shed.
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
        if options.system == .fixed { configuration.concurrency = .fixed(configuration.concurrency.maximum) }
        random = SeededRandomNumberGenerator(seed: options.seed)
        api = API(options)
        hosts = []
        hosts.reserveCapacity(options.hosts)
        for _ in 0..<options.hosts {
            // Each daemon started at its own time before the outage: its retry budget has filled
            // since, on its own phase.
            let started = Instant(offset: .seconds(-5 - Double.random(in: 0...options.startSpread, using: &random)))
            hosts.append(Host(limit: ConcurrencyLimit(configuration.concurrency), budget: RetryBudget(configuration.retryBudget, at: started)))
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
            case .answer(let host, let purpose, let answer, let sent):
                answered(host, purpose, answer, sent: sent)
            case .serviceEnd(let host, let purpose, let sent):
                serviceEnded(host, purpose, sent: sent)
            case .step(let host, let generation, let step):
                guard hosts[host].incident?.generation == generation else { continue }
                take(step, host)
            }
            if isDone { break }
        }
    }

    var isDone: Bool {
        now.offset > options.outageDuration && hosts.allSatisfy { $0.delivered == options.files }
    }

    // MARK: The API

    func send(_ host: Int, _ purpose: Purpose) {
        series.count(\.arrivals, at: now)
        if api.isDown(at: now) {
            requestsDuringOutage += 1
            events.push(.answer(host: host, purpose: purpose, answer: .reset, sent: now), at: now.advanced(by: .microseconds(200)))
            return
        }
        requestsAfter += 1
        if let perSecond = options.perSecond {
            api.tokens = min(perSecond, api.tokens + perSecond * api.refilledAt.duration(to: now).seconds)
            api.refilledAt = now
            guard api.tokens >= 1 else { return shed(host, purpose) }
            api.tokens -= 1
        }
        if api.inService < options.concurrency {
            api.inService += 1
            events.push(.serviceEnd(host: host, purpose: purpose, sent: now), at: now.advanced(by: options.service + options.overhead))
        } else if api.waiting.count < options.queue {
            api.waiting.append((host, purpose, now))
        } else {
            shed(host, purpose)
        }
    }

    func shed(_ host: Int, _ purpose: Purpose) {
        shedAfter += 1
        series.count(\.shed, at: now)
        events.push(.answer(host: host, purpose: purpose, answer: .shed(retryAfter: options.retryAfter), sent: now), at: now.advanced(by: options.overhead))
    }

    func serviceEnded(_ host: Int, _ purpose: Purpose, sent: Instant) {
        // The slot goes to the oldest waiting request before the answer lets anything new in.
        if let next = api.waiting.popFirst() {
            events.push(.serviceEnd(host: next.host, purpose: next.purpose, sent: next.sent), at: now.advanced(by: options.service + options.overhead))
        } else {
            api.inService -= 1
        }
        series.count(\.stored, at: now)
        answered(host, purpose, .stored(latency: sent.duration(to: now)), sent: sent)
    }

    // MARK: A host's dispatcher and bus

    /// Whether the host's incident holds new work back.
    func isHeld(_ host: Int) -> Bool {
        guard let incident = hosts[host].incident else { return false }
        return incident.state != .releasing
    }

    /// Starts what may start: released jobs first (they are older), then first runs, each
    /// through a slot of the concurrency limit; with the scope held, first runs park.
    func dispatch(_ host: Int) {
        while hosts[host].incident?.state == .releasing, hosts[host].parked > 0,
              hosts[host].incident!.releasing < configuration.concurrency.maximum, hosts[host].limit.acquire() {
            hosts[host].parked -= 1
            hosts[host].incident!.releasing += 1
            send(host, .released)
        }
        while hosts[host].queued > 0, hosts[host].firstRuns < options.syncConcurrency {
            if isHeld(host) {
                hosts[host].queued -= 1
                hosts[host].parked += 1
                continue
            }
            guard hosts[host].limit.acquire() else { break }
            hosts[host].queued -= 1
            hosts[host].firstRuns += 1
            send(host, .first)
        }
        finishRelease(host)
    }

    func answered(_ host: Int, _ purpose: Purpose, _ answer: Answer, sent: Instant) {
        if purpose != .canary {
            let outcome: ConcurrencyLimit<Instant>.Outcome =
                switch answer {
                case .stored(let latency): .success(latency: latency)
                case .shed: .overloaded
                case .reset: .backPressure
                }
            hosts[host].limit.release(outcome, at: now)
        } else if case .stored(let latency) = answer {
            hosts[host].limit.calibrate(latency)
        }
        if purpose == .first { hosts[host].firstRuns -= 1 }
        if purpose == .released { hosts[host].incident?.releasing -= 1 }
        switch answer {
        case .stored:
            delivered(host)
            hosts[host].budget.deposit(successes: 1)
            if purpose == .canary, hosts[host].incident?.state == .canary {
                stepFinished(host, .succeeded)
            }
        case .shed(let retryAfter):
            failed(host, purpose, category: .rateLimited(retryAfter: retryAfter), cause: "http503")
        case .reset:
            failed(host, purpose, category: .transient, cause: "connectionReset")
        }
        dispatch(host)
    }

    func delivered(_ host: Int) {
        hosts[host].delivered += 1
        if hosts[host].firstDelivery == nil { hosts[host].firstDelivery = now }
        lastDelivery = now
    }

    /// As the bus routes a failure: joins the open incident of its cause (a canary's failure is
    /// its step's result, a released job's interrupts the release), or opens one; the job parks.
    func failed(_ host: Int, _ purpose: Purpose, category: ErrorCategory, cause: String) {
        hosts[host].parked += 1
        let failure = Failure(
            category: category, scope: "api", cause: cause, service: "sync",
            text: OperatorText(title: cause, message: cause)
        )
        if var incident = hosts[host].incident, incident.cause == cause {
            switch (incident.state, purpose) {
            case (.canary, .canary):
                hosts[host].incident = incident
                stepFinished(host, .failed(reason: cause, retryAfter: category.retryAfter))
            case (.releasing, _):
                execute(incident.policy.releaseInterrupted(by: failure, at: now, using: &random), host, &incident)
            default:
                if let action = incident.policy.joined(by: failure, at: now, using: &random) {
                    execute(action, host, &incident)
                } else {
                    hosts[host].incident = incident
                }
            }
            return
        }
        // A new cause: the bus opens an incident for it, which holds the scope. The jobs of an
        // incident of another cause (being released, or whose canary just met the new cause)
        // park under it as they are taken: modelled as moving them now, the old incident ending.
        var incident = Incident(
            policy: IncidentPolicy(for: failure, configuration: configuration, canProbe: false),
            cause: cause,
            generation: (hosts[host].incident?.generation ?? 0) &+ 1
        )
        incident.releasing = hosts[host].incident?.releasing ?? 0
        hosts[host].limit.hold()
        execute(incident.policy.start(with: failure, at: now, using: &random), host, &incident)
    }

    func stepFinished(_ host: Int, _ result: StepResult) {
        guard var incident = hosts[host].incident else { return }
        execute(incident.policy.stepFinished(result, at: now, using: &random), host, &incident)
    }

    func execute(_ action: PolicyAction<Instant>, _ host: Int, _ incident: inout Incident) {
        incident.generation &+= 1
        switch action {
        case .wait(let until, let step):
            incident.state = .waiting
            hosts[host].limit.hold()
            events.push(.step(host: host, generation: incident.generation, step: step), at: until)
        case .now(let step):
            hosts[host].incident = incident
            take(step, host)
            return
        case .release:
            incident.state = .releasing
            hosts[host].limit.resume()
        case .needsOperator, .hold:
            fatalError("no policy of this model waits for an operator")
        }
        hosts[host].incident = incident
    }

    func take(_ step: PolicyStep, _ host: Int) {
        guard var incident = hosts[host].incident else { return }
        switch step {
        case .canary:
            guard hosts[host].parked > 0 else { return stepFinished(host, .succeeded) }
            guard !incident.policy.canaryDrawsOnBudget || hosts[host].budget.withdraw(at: now) else {
                incident.generation &+= 1
                events.push(.step(host: host, generation: incident.generation, step: .canary), at: hosts[host].budget.nextToken(after: now))
                hosts[host].incident = incident
                return
            }
            incident.state = .canary
            hosts[host].incident = incident
            hosts[host].parked -= 1
            send(host, .canary)
        case .probe, .reauthenticate, .close:
            fatalError("no policy of this model takes \(step)")
        }
    }

    /// An incident whose jobs were all released, and came back, is over.
    func finishRelease(_ host: Int) {
        guard let incident = hosts[host].incident, incident.state == .releasing,
              hosts[host].parked == 0, incident.releasing == 0 else { return }
        hosts[host].incident = nil
    }
}

// MARK: - Figures

extension Simulation {
    var capacity: Double {
        let slots = Double(options.concurrency) / options.service.seconds
        return options.perSecond.map { min($0, slots) } ?? slots
    }

    func figures() -> Figures {
        let recovery = Int(options.outageDuration.seconds)
        let after = series.arrivals.dropFirst(recovery)
        let drained = lastDelivery.map { ($0.offset - options.outageDuration).seconds }
        let ideal = Double(options.hosts * options.files) / capacity
        let firsts = hosts.compactMap { $0.firstDelivery.map { ($0.offset - options.outageDuration).seconds } }.sorted()
        func percentile(_ p: Double) -> Double? {
            firsts.isEmpty ? nil : firsts[min(firsts.count - 1, Int(Double(firsts.count - 1) * p + 0.5))]
        }
        let delivered = hosts.reduce(0) { $0 + $1.delivered }
        return Figures(
            system: options.system == .fixed ? "errorbusd, fixed 16 at once (ablation), simulated" : "errorbusd, simulated",
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
            lost: options.hosts * options.files - delivered,
            drainSeconds: drained,
            drainOverIdeal: drained.map { $0 / ideal },
            goodputOverCapacity: drained.map { Double(delivered) / $0 / capacity },
            firstDeliveryP50: percentile(0.5),
            firstDeliveryP99: percentile(0.99),
            series: series
        )
    }
}

/// What a run measured: the same figures as the real run of scripts/bench-fleet.
struct Figures: Codable {
    var system: String
    var hosts: Int
    var files: Int
    var outage: Double
    /// Requests per second the API can serve.
    var capacity: Double
    var requestsPerHostPerMinuteDuringOutage: Double
    /// The most requests arriving in one second after the recovery, over the capacity.
    var peakArrivalsOverCapacity: Double
    /// Of the requests after the recovery, the share shed with 503.
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
            Each host runs the ErrorBus's own policy state machines (incident back-off with \
            jitter, the retry budget, the adaptive concurrency limit) against a modelled API with \
            errorbus-sandbox's capacity law. Prints the figures as JSON; scripts/bench-fleet runs it.
            """
    )

    @OptionGroup var options: Options

    func run() throws {
        let simulation = Simulation(options)
        simulation.run()
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
