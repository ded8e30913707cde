import ErrorBus
import ErrorBusTesting
import Synchronization
import Testing

/// An API on a manual clock that refuses work by a law, as real APIs do: a share of requests
/// failing at random (one bad backend behind a balancer), a rate (a token bucket: `503` with
/// `Retry-After` beyond it), a quota per window (told with every answer, as the `RateLimit` fields
/// tell it: `429` beyond it); and names it refuses for ever (poison). Operations call
/// ``serve(_:)``; the law is decided at the clock's instant.
final class ModelAPI: Sendable {
    enum Law: Sendable {
        /// Every request is served.
        case healthy
        /// Every request fails (`transient`, a reset) within the windows, by the clock; served
        /// outside them.
        case down([Range<Duration>])
        /// Each request fails with this probability (`transient`, `http502`).
        case failing(share: Double)
        /// `perSecond` requests a second, from a bucket `burst` deep; beyond, `503` with
        /// `Retry-After` (`rateLimited`). Optionally a share of the admitted requests fails too.
        case rate(perSecond: Double, burst: Double = 1, retryAfter: Duration = .seconds(1), failing: Double = 0)
        /// `limit` requests in each window of `window` (from the clock's origin); every answer
        /// tells the bus what remains (``ErrorBus/quota(remaining:reset:for:)``); beyond, `429`
        /// with `Retry-After` until the window ends.
        case quota(limit: Int, window: Duration)
    }

    struct Tally: Sendable {
        var attempts = 0
        var served = 0
        /// Refused by the law (the rate or the quota).
        var refused = 0
        /// Failed by the law's share.
        var failed = 0
        /// Runs of each job.
        var runs: [String: Int] = [:]
        /// When each request was served.
        var servedAt: [Duration] = []
        /// When each request arrived.
        var arrivedAt: [Duration] = []
        /// When each request the law refused arrived.
        var refusedAt: [Duration] = []
        /// When each run of a poison name started and failed.
        var poisonRuns: [Range<Duration>] = []
    }

    private struct State {
        var tally = Tally()
        var random: SeededRandomNumberGenerator
        var tokens: Double
        var refilledAt: Duration = .zero
        var window = 0
        var usedInWindow = 0
        var inFlight = 0
    }

    let law: Law
    let poison: Set<String>
    /// How long a run of a poison name takes before it fails, by the clock (a large upload cut
    /// half way: its bytes at the link's speed); ``drive(_:through:against:clock:spacing:step:limit:)``
    /// waits it out.
    let poisonRunTime: Duration
    let clock: ManualClock
    /// The bus told of the quota, for ``Law/quota(limit:window:)``.
    private let bus: ErrorBus?
    private let state: Mutex<State>

    init(_ law: Law, poison: Set<String> = [], poisonRunTime: Duration = .zero, clock: ManualClock, bus: ErrorBus? = nil, seed: UInt64 = 7) {
        self.law = law
        self.poison = poison
        self.poisonRunTime = poisonRunTime
        self.clock = clock
        self.bus = bus
        var tokens = 0.0
        if case .rate(_, let burst, _, _) = law { tokens = burst }
        state = Mutex(State(random: SeededRandomNumberGenerator(seed: seed), tokens: tokens))
    }

    var tally: Tally { state.withLock { $0.tally } }

    /// The requests the law refused that arrived after `instant`.
    func refusals(after instant: Duration) -> Int {
        state.withLock { $0.tally.refusedAt.count { $0 > instant } }
    }
    var inFlight: Int { state.withLock { $0.inFlight } }

    /// Serves one request of `job` now, or throws what the API answered.
    func serve(_ job: Job) throws {
        let now = clock.now.offset
        let (answer, quota): (TestFailure?, (Int, Duration)?) = state.withLock { state in
            state.tally.attempts += 1
            state.tally.arrivedAt.append(now)
            state.tally.runs[job.id, default: 0] += 1
            var quota: (Int, Duration)?
            let answer: TestFailure?
            switch law {
            case .healthy:
                answer = nil
            case .down(let windows):
                answer = windows.contains { $0.contains(now) } ? TestFailure(.transient, cause: "connectionReset") : nil
            case .failing(let share):
                answer = Double.random(in: 0..<1, using: &state.random) < share ? TestFailure(.transient, cause: "http502") : nil
            case .rate(let perSecond, let burst, let retryAfter, let share):
                state.tokens = min(burst, state.tokens + perSecond * ((now - state.refilledAt) / .seconds(1)))
                state.refilledAt = now
                if state.tokens >= 1 {
                    state.tokens -= 1
                    answer = Double.random(in: 0..<1, using: &state.random) < share ? TestFailure(.transient, cause: "http502") : nil
                } else {
                    answer = TestFailure(.rateLimited(retryAfter: retryAfter), cause: "http503")
                    state.tally.refused += 1
                    state.tally.refusedAt.append(now)
                }
            case .quota(let limit, let window):
                let index = Int(now / window)
                if index != state.window {
                    state.window = index
                    state.usedInWindow = 0
                }
                let reset = window * (index + 1) - now
                if state.usedInWindow < limit {
                    state.usedInWindow += 1
                    answer = nil
                } else {
                    answer = TestFailure(.rateLimited(retryAfter: reset), cause: "http429")
                    state.tally.refused += 1
                    state.tally.refusedAt.append(now)
                }
                quota = (limit - state.usedInWindow, reset)
            }
            if poison.contains(job.id) {
                state.tally.failed += 1
                state.tally.poisonRuns.append((now - poisonRunTime)..<now)
                return (TestFailure(.transient, cause: "http500"), quota)
            }
            if let answer {
                if answer.category.kind == .transient { state.tally.failed += 1 }
                return (answer, quota)
            }
            state.tally.served += 1
            state.tally.servedAt.append(now)
            return (nil, quota)
        }
        if let (remaining, reset) = quota { bus?.quota(remaining: remaining, reset: reset, for: job) }
        if let answer { throw answer }
    }
}

/// What became of jobs driven through a bus against a ``ModelAPI``.
struct DriveResult: Sendable {
    var outcomes: [String: JobOutcome]
    /// When each job ended, by the manual clock.
    var endedAt: [String: Duration]
    /// The clock's instant when the drive ended.
    var end: Duration

    var succeeded: Int { outcomes.values.count { if case .succeeded = $0 { true } else { false } } }
    var deadLettered: [String] {
        outcomes.compactMap { id, outcome in
            if case .stopped(let stopped) = outcome, stopped.reason == .deadLettered { id } else { nil }
        }
    }
}

/// Submits `jobs` to `bus`, the `n`-th at `spacing × n` on `clock`, each running `api.serve`, and
/// moves the clock from one deadline (or arrival) to the next whenever the bus has done all it
/// can at the current instant, until every job has ended or the clock reaches `limit`.
///
/// "All it can": no operation runs, and every job submitted has ended or is held by the bus
/// (parked, waiting for the retry budget, or waiting for a slot).
func drive(
    _ jobs: [Job],
    through bus: ErrorBus,
    against api: ModelAPI,
    clock: ManualClock,
    spacing: Duration = .zero,
    step: Duration = .milliseconds(5),
    limit: Duration
) async -> DriveResult {
    let ended = Ended()
    let running = Counter()
    // Runs waiting on the clock (a poison's run time): running, yet waiting for the clock to move.
    let sleeping = Counter()
    @Sendable func end(_ job: Job, _ outcome: JobOutcome) {
        ended.state.withLock {
            $0.outcomes[job.id] = outcome
            $0.at[job.id] = clock.now.offset
        }
    }
    await withDiscardingTaskGroup { group in
        var submitted = 0
        while true {
            while submitted < jobs.count, spacing * submitted <= clock.now.offset {
                let job = jobs[submitted]
                submitted += 1
                group.addTask {
                    let submission = await bus.submit(job) {
                        running.increment()
                        defer { running.decrement() }
                        if api.poisonRunTime > .zero, api.poison.contains(job.id) {
                            sleeping.increment()
                            defer { sleeping.decrement() }
                            try await clock.sleep(for: api.poisonRunTime)
                        }
                        try api.serve(job)
                    } completion: { end(job, $0) }
                    switch submission {
                    case .completed: end(job, .succeeded)
                    case .stopped(let stopped): end(job, .stopped(stopped))
                    case .parked: break
                    }
                }
            }
            // Wait until the bus has done what it can now: every timer the clock woke has returned
            // from its sleep (and gone on to what it does at this instant), and no job is between
            // places, three looks in a row (a task the clock woke may still be on its way to the
            // bus when it first looks idle, on a loaded machine).
            var idleLooks = 0
            while idleLooks < 3 {
                while clock.wakingCount > 0 { await Task.yield() }
                let snapshot = await bus.snapshot()
                let held = snapshot.parkedJobs + snapshot.waitingForBudget + snapshot.concurrency.reduce(0) { $0 + $1.waiting }
                let done = ended.state.withLock { $0.outcomes.count }
                let runningNow = running.count - sleeping.count
                idleLooks = runningNow == 0 && done + held + sleeping.count == submitted ? idleLooks + 1 : 0
                await Task.yield()
            }
            let done = ended.state.withLock { $0.outcomes.count }
            if done == jobs.count || clock.now.offset >= limit { break }
            if done < submitted {
                await clock.sleepers(atLeast: 1)
                if Task.isCancelled {
                    // The test's time limit: jobs the bus holds that no timer will move.
                    let snapshot = await bus.snapshot()
                    Issue.record("drive stopped at \(clock.now): \(done) of \(submitted) jobs ended; held: \(snapshot.parkedJobs) parked, \(snapshot.waitingForBudget) waiting for the budget; incidents: \(snapshot.incidents.map { "\($0.id) \($0.state) parked \($0.parked) next \(String(describing: $0.next))" })")
                    break
                }
            }
            let arrival = submitted < jobs.count ? ManualClock.Instant(offset: spacing * submitted) : nil
            let next = [clock.nextDeadline, arrival].compactMap { $0 }.min()
            guard let next else { break }
            // A step of at most `step`: a timer the clock woke may not have done its work yet when
            // the bus looks idle, and would then do it this late at most.
            clock.advance(to: min(next, clock.now.advanced(by: step), ManualClock.Instant(offset: limit)))
            for _ in 0..<20 { await Task.yield() }
        }
        // Runs still waiting for a slot when the limit came end with their tasks.
        group.cancelAll()
    }
    return ended.state.withLock { DriveResult(outcomes: $0.outcomes, endedAt: $0.at, end: clock.now.offset) }
}

/// What became of the jobs of a drive so far.
private final class Ended: Sendable {
    let state = Mutex<(outcomes: [String: JobOutcome], at: [String: Duration])>(([:], [:]))
}
