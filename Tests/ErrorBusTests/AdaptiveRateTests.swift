import ErrorBus
import ErrorBusTesting
import Testing

/// Each scope's rate learns the law it is sent under: a rate (a token bucket that refuses beyond
/// it), a quota per window the server states, and a `Retry-After` a fleet receives at once. Driven
/// as pure values on virtual time, hosts and server alike.
@Suite
struct AdaptiveRateTests {
    typealias Instant = ManualClock.Instant
    typealias Rate = AdaptiveRate<Instant>

    static func at(_ seconds: Double) -> Instant { Instant(offset: .seconds(seconds)) }

    /// A server's token bucket: `perSecond` requests a second, holding a second's worth (as the
    /// sandbox's `perSecond` capacity does).
    struct Bucket {
        let perSecond: Double
        var tokens = 0.0
        var refilledAt = 0.0

        mutating func admit(at now: Double) -> Bool {
            tokens = min(perSecond, tokens + perSecond * (now - refilledAt))
            refilledAt = now
            guard tokens >= 1 else { return false }
            tokens -= 1
            return true
        }
    }

    /// `hosts` hosts, each with work always waiting, sending through their rates to a bucket of
    /// `perSecond` for `seconds`; each request is answered at once. Returns the requests sent and
    /// refused after `settle` seconds.
    static func fleet(hosts: Int, perSecond: Double, seconds: Double, settle: Double) -> (sent: Int, refused: Int) {
        var rates = Array(repeating: Rate(ErrorBusConfiguration.Pacing()), count: hosts)
        var next = Array(repeating: 0.0, count: hosts)
        for host in 0..<hosts { next[host] = Double(host) / Double(hosts) / perSecond }
        var bucket = Bucket(perSecond: perSecond)
        var sent = 0
        var refused = 0
        while true {
            let host = next.indices.min { next[$0] < next[$1] }!
            let now = next[host]
            guard now < seconds else { break }
            if let due = rates[host].take(at: at(now)) {
                next[host] = max(due.offset / .seconds(1), now + 1e-6)
                continue
            }
            let admitted = bucket.admit(at: now)
            if now >= settle {
                sent += 1
                if !admitted { refused += 1 }
            }
            if admitted {
                rates[host].succeeded(at: at(now))
            } else {
                rates[host].refused(sentAt: at(now), at: at(now))
            }
            // The next request is ready at once (a backlog), a tenth of a millisecond later.
            next[host] = now + 0.0001
        }
        return (sent, refused)
    }

    @Test func aLoneHostLearnsARateAndIsRefusedRarely() {
        let (sent, refused) = Self.fleet(hosts: 1, perSecond: 20, seconds: 120, settle: 10)
        // About the rate the server serves (a concurrency limit alone would send thousands a
        // second and be refused almost always), a few percent refused.
        #expect(Double(sent) / 110 > 20 * 0.85, "\(sent) requests in 110 s")
        #expect(Double(refused) / Double(sent) < 0.06, "\(refused) of \(sent) refused")
    }

    @Test(arguments: [10, 100])
    func aFleetSharesARateAndIsRefusedRarely(hosts: Int) {
        let perSecond = 4.0 * Double(hosts)
        let (sent, refused) = Self.fleet(hosts: hosts, perSecond: perSecond, seconds: 180, settle: 30)
        #expect(Double(sent) / 150 > perSecond * 0.8, "\(sent) requests in 150 s")
        #expect(Double(refused) / Double(sent) < 0.1, "\(refused) of \(sent) refused")
    }

    @Test func aRefusalCutsOnceForWhatWasSentBeforeItTookEffect() throws {
        var rate = Rate(ErrorBusConfiguration.Pacing())
        #expect(rate.limit(at: Self.at(0)) == nil, "off until the scope first refuses")
        for step in 0..<20 {
            #expect(rate.take(at: Self.at(Double(step) * 0.05)) == nil)
            rate.succeeded(at: Self.at(Double(step) * 0.05))
        }
        // Twenty a second, then refusals of requests sent before the cut and just after it.
        rate.refused(sentAt: Self.at(1), at: Self.at(1))
        let cut = try #require(rate.limit(at: Self.at(1)))
        #expect(cut > 10 && cut < 20, "\(cut)")
        rate.refused(sentAt: Self.at(0.99), at: Self.at(1.01))
        rate.refused(sentAt: Self.at(1.2), at: Self.at(1.2))
        #expect(rate.limit(at: Self.at(1.2)) == cut, "refusals of requests sent before the cut took effect change nothing")
        // Spaced, never in bursts: no token was saved up before the cut, and the next is due a
        // whole interval after the last.
        let taken = rate.take(at: Self.at(1.2))
        #expect(taken == nil, "a token refilled since the cut")
        let due = rate.take(at: Self.at(1.2))
        #expect(due.map { abs(($0.offset - .seconds(1.2)) / .seconds(1) - 1 / cut) < 0.001 } == true, "\(String(describing: due))")
    }

    /// What is sent while an incident holds the scope (a request now and then) says nothing of
    /// what the host sends when it may: a refusal just after the hold ends cuts the rate from
    /// what was sent before it, not from the trickle (measured, the trickle left a rate of about
    /// one request a second, which took a minute to climb back).
    @Test func whatIsSentWhileHeldIsNotMeasured() throws {
        var rate = Rate(ErrorBusConfiguration.Pacing())
        for step in 0..<20 {
            #expect(rate.take(at: Self.at(Double(step) * 0.05)) == nil)
            rate.succeeded(at: Self.at(Double(step) * 0.05))
        }
        rate.refused(sentAt: Self.at(1), at: Self.at(1))
        // Two seconds at the learnt rate, then held for ten, a request every two seconds.
        var now = 1.0
        while now < 3 {
            if let due = rate.take(at: Self.at(now)) {
                now = due.offset / .seconds(1)
                continue
            }
            rate.succeeded(at: Self.at(now))
            now += 0.001
        }
        let before = try #require(rate.limit(at: Self.at(3)))
        rate.hold(at: Self.at(3))
        for second in stride(from: 4.0, to: 13, by: 2) {
            _ = rate.take(at: Self.at(second))
            rate.succeeded(at: Self.at(second))
        }
        rate.resume(at: Self.at(13))
        _ = rate.take(at: Self.at(13))
        rate.refused(sentAt: Self.at(13), at: Self.at(13.01))
        let cut = try #require(rate.limit(at: Self.at(13.01)))
        #expect(cut > before / 2, "cut to \(cut) from \(before)")
    }

    @Test func aRateLiftsAfterQuiet() {
        var rate = Rate(ErrorBusConfiguration.Pacing(quiet: .seconds(120)))
        _ = rate.take(at: Self.at(0))
        rate.refused(sentAt: Self.at(0), at: Self.at(0))
        #expect(rate.limit(at: Self.at(1)) != nil)
        rate.succeeded(at: Self.at(121))
        #expect(rate.limit(at: Self.at(121)) == nil)
    }

    /// A host cut to a low rate while others shared the scope takes its place back once they are
    /// done: its curve's cycle is at most `longestCycle` (5 s), and three cycles without a
    /// refusal lift the rate, long before `quiet`. (With a 60 s cycle and only `quiet`, a fleet
    /// of 100 against a rate limit took five times the ideal to drain: `scripts/bench-fleet`.)
    @Test func aRateLiftsAfterThreeCyclesWithoutARefusal() {
        var rate = Rate(ErrorBusConfiguration.Pacing(quiet: .seconds(120)))
        // One request every 2 s; the last refused 0.6 s after it left: cut from under 2 a
        // second, whose cycle (20 requests' worth, 10 s) is the longest, 5 s.
        for second in stride(from: 0.0, to: 5, by: 2) {
            _ = rate.take(at: Self.at(second))
            rate.succeeded(at: Self.at(second + 0.01))
        }
        _ = rate.take(at: Self.at(5))
        rate.refused(sentAt: Self.at(5), at: Self.at(5.6))
        #expect(rate.limit(at: Self.at(6)) != nil)
        rate.succeeded(at: Self.at(15))
        #expect(rate.limit(at: Self.at(15)) != nil, "two cycles without a refusal: still on")
        rate.succeeded(at: Self.at(21))
        #expect(rate.limit(at: Self.at(21)) == nil, "three cycles without a refusal: off")
    }

    /// A quota of 120 requests per 60 s window, stated with every answer: a host with work always
    /// waiting spends it evenly over the window, not at its start, and is never refused.
    @Test func aStatedQuotaIsSpreadOverItsWindow() {
        var rate = Rate(ErrorBusConfiguration.Pacing())
        var now = 0.0
        var used = 0
        let windowStart = 0.0
        var perQuarter = [0, 0, 0, 0]
        while now < 60 {
            if let due = rate.take(at: Self.at(now)) {
                now = due.offset / .seconds(1)
                continue
            }
            if now - windowStart >= 60 { break }
            used += 1
            #expect(used <= 120, "the quota holds")
            perQuarter[min(3, Int((now - windowStart) / 15))] += 1
            rate.quota(remaining: 120 - used, reset: .seconds(60 - (now - windowStart)), at: Self.at(now))
            now += 0.0001
        }
        #expect(used >= 100, "most of the quota used: \(used)")
        #expect(perQuarter.allSatisfy { $0 >= 20 && $0 <= 40 }, "spread over the window: \(perQuarter)")
    }

    /// Ten hosts sharing one quota (one key for the fleet): each learns its share from how fast the
    /// remaining count falls between its answers, and together they spread the quota over the
    /// window.
    @Test func aFleetSharingAQuotaSpreadsItTogether() {
        let hosts = 10
        var rates = Array(repeating: Rate(ErrorBusConfiguration.Pacing()), count: hosts)
        var next = (0..<hosts).map { Double($0) * 0.001 }
        var used = 0
        var perQuarter = [0, 0, 0, 0]
        var refused = 0
        while true {
            let host = next.indices.min { next[$0] < next[$1] }!
            let now = next[host]
            guard now < 60 else { break }
            if let due = rates[host].take(at: Self.at(now)) {
                next[host] = max(due.offset / .seconds(1), now + 1e-6)
                continue
            }
            if used >= 1_000 {
                refused += 1
            } else {
                used += 1
                perQuarter[min(3, Int(now / 15))] += 1
            }
            rates[host].quota(remaining: max(0, 1_000 - used), reset: .seconds(60 - now), at: Self.at(now))
            next[host] = now + 0.0001
        }
        #expect(refused < 20, "\(refused) refused")
        #expect(perQuarter[3] >= 100, "the last quarter still had quota to spend: \(perQuarter)")
        #expect(perQuarter[0] <= 500, "not spent at the window's start: \(perQuarter)")
    }

    /// A hundred hosts told `Retry-After: 10` at the same instant come back over the hint and up
    /// to half again, never before it, and never all in the same moment.
    @Test func aRetryAfterAFleetReceivesAtOnceIsNotAnsweredAtOnce() throws {
        var returns: [Double] = []
        for seed in 1...100 {
            let failure = Failure(category: .rateLimited(retryAfter: .seconds(10)), scope: "api.test", cause: "http503", service: "sync", text: OperatorText(title: "Busy", message: "Busy."))
            var policy = IncidentPolicy<Instant>(for: failure, configuration: ErrorBusConfiguration(), canProbe: false)
            var random = SeededRandomNumberGenerator(seed: UInt64(seed))
            guard case .wait(let until, .canary) = policy.start(with: failure, at: Self.at(0), using: &random) else {
                Issue.record("a hint is waited for")
                return
            }
            returns.append(until.offset / .seconds(1))
        }
        #expect(returns.allSatisfy { $0 >= 10 && $0 <= 15 })
        // Spread: no half-second holds more than a fifth of the fleet.
        let buckets = Dictionary(grouping: returns) { Int($0 * 2) }
        #expect(buckets.values.map(\.count).max()! <= 20, "\(buckets.mapValues(\.count))")
    }
}
