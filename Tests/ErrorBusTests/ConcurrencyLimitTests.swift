import ErrorBus
import ErrorBusTesting
import Testing

/// The adaptive concurrency limit of a scope: slow start, additive increase, multiplicative
/// decrease on each signal, nothing gained while an incident holds the scope, the bounds.
struct ConcurrencyLimitTests {
    typealias Limit = ConcurrencyLimit<ManualClock.Instant>
    let fast = Duration.milliseconds(20)

    /// Runs `count` jobs, each acquiring and releasing with `outcome`.
    private func run(_ limit: inout Limit, _ count: Int, _ outcome: Limit.Outcome, at now: ManualClock.Instant = .seconds(0)) {
        for _ in 0..<count {
            let acquired = limit.acquire()
            #expect(acquired)
            limit.release(outcome, at: now)
        }
    }

    @Test func slowStartDoublesPerRoundTripUpToTheMaximum() {
        var limit = Limit(.init(maximum: 16))
        #expect(limit.permits == 1)
        // A round trip: as many successes as the limit allows.
        var rounds = 0
        while limit.permits < 16 {
            run(&limit, limit.permits, .success(latency: fast))
            rounds += 1
        }
        #expect(rounds == 4)  // 1, 2, 4, 8, 16
        run(&limit, 100, .success(latency: fast))
        #expect(limit.permits == 16)
    }

    @Test func slotsAreBoundedByTheLimit() {
        var limit = Limit(.init(maximum: 16, initial: 3))
        var acquired: [Bool] = []
        for _ in 0..<4 { acquired.append(limit.acquire()) }
        #expect(acquired == [true, true, true, false])
        limit.release(.other, at: .seconds(0))
        let again = limit.acquire()
        #expect(again && limit.inFlight == 3)
    }

    /// A lent slot counts toward the maximum only; its success neither grows the limit nor
    /// teaches the latency; its back-pressure still halves the limit.
    @Test func aLentSlotCountsTowardTheMaximumOnlyAndItsSuccessTeachesNothing() {
        var limit = Limit(.init(maximum: 3))
        let acquired1 = limit.acquire()
        #expect(acquired1 == true)
        let acquired2 = limit.acquire()
        #expect(acquired2 == false)
        limit.lend()
        limit.lend()  // once per holder: one slot is held
        #expect(limit.lent == 1)
        let acquired3 = limit.acquire()
        #expect(acquired3 == true)
        limit.lend()
        let acquired4 = limit.acquire()
        #expect(acquired4 == true)
        // Three hold a slot: the maximum, though two are lent.
        let acquired5 = limit.acquire()
        #expect(acquired5 == false)
        limit.releaseLent(.success(latency: .seconds(30)), at: .seconds(0))
        #expect(limit.permits == 1)
        #expect(limit.baseline == nil)
        limit.release(.success(latency: fast), at: .seconds(0))
        #expect(limit.permits == 2)
        #expect(limit.baseline == fast)
        limit.releaseLent(.backPressure, at: .seconds(1))
        #expect(limit.permits == 1)
        #expect(limit.inFlight == 0 && limit.lent == 0)
    }

    @Test func pastTheThresholdTheLimitGrowsByOnePerRoundTrip() {
        var limit = Limit(.init(maximum: 64, initial: 8))
        run(&limit, 1, .success(latency: fast))
        run(&limit, 1, .backPressure, at: .seconds(1))  // threshold 4.5
        #expect(limit.permits == 4)
        #expect(limit.slowStartThreshold == 4.5)
        // Each round trip (as many successes as there are permits) adds about one.
        for _ in 0..<5 {
            let before = limit.limit
            run(&limit, limit.permits, .success(latency: fast), at: .seconds(2))
            #expect((0.75...1.25).contains(limit.limit - before), "\(before) → \(limit.limit)")
        }
        #expect((8.5...9.5).contains(limit.limit))
    }

    @Test func backPressureHalvesTheLimitOncePerRoundTrip() {
        var limit = Limit(.init(maximum: 16))
        run(&limit, 15, .success(latency: fast))
        #expect(limit.permits == 16)
        run(&limit, 1, .backPressure, at: .seconds(10))
        #expect(limit.permits == 8)
        // The rest of the burst's answers (within one baseline round trip) say the same.
        run(&limit, 5, .backPressure, at: .seconds(10.01))
        #expect(limit.permits == 8)
        run(&limit, 1, .backPressure, at: .seconds(11))
        #expect(limit.permits == 4)
        // Never below one.
        for second in 12..<20 { run(&limit, 1, .backPressure, at: .seconds(Double(second))) }
        #expect(limit.permits == 1)
    }

    /// Runs round trips of `latency`, each as many answers as the limit permits over a window
    /// as long as the baseline, from `start`.
    private func roundTrips(_ limit: inout Limit, _ count: Int, latency: Duration, from start: Duration) -> Duration {
        var now = start
        for _ in 0..<count {
            run(&limit, limit.permits - 1, .success(latency: latency), at: ManualClock.Instant(offset: now))
            now += limit.baseline ?? latency
            run(&limit, 1, .success(latency: latency), at: ManualClock.Instant(offset: now))
            now += .milliseconds(1)
        }
        return now
    }

    @Test func aRoundTripOfSlowAnswersHalvesTheLimit() {
        var limit = Limit(.init(maximum: 16, initial: 16))
        var now = roundTrips(&limit, 10, latency: fast, from: .seconds(1))
        #expect(limit.permits == 16)
        // The server's queue fills: a whole round trip answers five times slower.
        now = roundTrips(&limit, 1, latency: fast * 5, from: now)
        #expect(limit.permits == 8)
        #expect(limit.slowStartThreshold == 8)
        _ = now
    }

    @Test func oneSlowAnswerAmongFastOnesIsNoSignal() {
        var limit = Limit(.init(maximum: 16, initial: 16))
        let now = roundTrips(&limit, 10, latency: fast, from: .seconds(1))
        // A hiccup: one answer ten times slower in a window of fast ones.
        run(&limit, 1, .success(latency: fast * 10), at: ManualClock.Instant(offset: now))
        _ = roundTrips(&limit, 3, latency: fast, from: now)
        #expect(limit.permits == 16)
    }

    @Test func aBaselineThatVariesRaisesTheBar() {
        // Answers alternate between 10 and 30 ms round trip after round trip: their spread is
        // the scope's normal, and a round trip at 45 ms is within it.
        var limit = Limit(.init(maximum: 16, initial: 16))
        var now = Duration.seconds(1)
        for index in 0..<40 {
            now = roundTrips(&limit, 1, latency: index.isMultiple(of: 2) ? .milliseconds(10) : .milliseconds(30), from: now)
        }
        #expect(limit.permits == 16)
        now = roundTrips(&limit, 1, latency: .milliseconds(45), from: now)
        #expect(limit.permits == 16)
    }

    @Test func anOverloadedScopesLatencyBecomesACeilingForAWhile() {
        // A host that came to a loaded scope: its baseline is the queue's 200 ms.
        let queued = Duration.milliseconds(200)
        var limit = Limit(.init(maximum: 16, initial: 16))
        var now = roundTrips(&limit, 3, latency: queued, from: .seconds(1))
        #expect(limit.permits == 16)
        // The server sheds: the latency it answered with is a congested one from now on.
        let acquired = limit.acquire()
        #expect(acquired)
        limit.release(.overloaded, at: ManualClock.Instant(offset: now))
        #expect(limit.permits == 8)
        #expect(limit.ceiling == queued)
        now = roundTrips(&limit, 5, latency: queued, from: now + .seconds(1))
        #expect(limit.permits == 1)
        // Faster answers (the queue drained) grow it again.
        now = roundTrips(&limit, 3, latency: .milliseconds(150), from: now)
        let drained = limit.limit
        #expect(drained > 2)
        // Round trips on, the scope has not pushed back: the ceiling is forgotten, and 200 ms
        // is slow only if it is slow for the baseline.
        now = roundTrips(&limit, Limit.ceilingRoundTrips, latency: .milliseconds(150), from: now)
        #expect(limit.ceiling == nil)
        #expect(limit.permits == 16)
        _ = roundTrips(&limit, 3, latency: queued, from: now)
        #expect(limit.permits == 16)
    }

    @Test func otherBackPressureLeavesNoCeiling() {
        var limit = Limit(.init(maximum: 16, initial: 16))
        _ = roundTrips(&limit, 3, latency: fast, from: .seconds(1))
        run(&limit, 1, .backPressure, at: .seconds(5))
        #expect(limit.ceiling == nil)
        #expect(limit.permits == 8)
    }

    @Test func aFixedLimitNeverMoves() {
        var limit = Limit(.fixed(16))
        _ = roundTrips(&limit, 3, latency: fast, from: .seconds(1))
        run(&limit, 1, .overloaded, at: .seconds(5))
        _ = roundTrips(&limit, 3, latency: fast * 10, from: .seconds(6))
        #expect(limit.permits == 16)
    }

    @Test func aCanaryCalibratesTheBaselineWithoutMovingTheLimit() {
        var limit = Limit(.init(maximum: 16, initial: 2))
        limit.calibrate(.milliseconds(50))
        #expect(limit.baseline == .milliseconds(50))
        #expect(limit.permits == 2)
        // Loaded answers do not lift it; a slower canary does not either; a faster one lowers it.
        limit.calibrate(.milliseconds(300))
        #expect(limit.baseline == .milliseconds(50))
        limit.calibrate(.milliseconds(10))
        #expect(limit.baseline! < .milliseconds(50))
        // With it, a round trip at the queue's 250 ms is congested, not the norm.
        _ = roundTrips(&limit, 1, latency: .milliseconds(250), from: .seconds(1))
        #expect(limit.permits == 1)
    }

    @Test func otherFailuresSayNothingAboutLoad() {
        var limit = Limit(.init(maximum: 16, initial: 4))
        run(&limit, 10, .other)
        #expect(limit.permits == 4)
    }

    @Test func nothingIsGainedWhileHeldAndTheResolutionStartsSlowAgain() {
        var limit = Limit(.init(maximum: 16))
        run(&limit, 15, .success(latency: fast))
        #expect(limit.permits == 16)
        limit.hold()
        run(&limit, 1, .backPressure, at: .seconds(1))
        run(&limit, 20, .success(latency: fast), at: .seconds(2))
        #expect(limit.permits == 8)
        limit.resume()
        #expect(limit.permits == 1 && !limit.isHeld)
        // Slow start back to where it was before the incident, then one per round trip.
        while limit.permits < 8 { run(&limit, limit.permits, .success(latency: fast), at: .seconds(3)) }
        #expect(limit.slowStartThreshold == 8)
    }
}
