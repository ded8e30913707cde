@testable import ErrorBus
import ErrorBusTesting
import Testing

/// The policies as plain state machines: inputs in, actions out, on a manual clock.
@Suite struct PolicyTests {
    typealias Instant = ManualClock.Instant

    @Test func transientDelaysUseFullJitterBelowTheCapAndHalfJitterAtIt() {
        let configuration = ErrorBusConfiguration.Backoff(base: .seconds(1), factor: 2, cap: .seconds(300))
        var random = SeededRandomNumberGenerator(seed: 7)
        var lowest = [Double](repeating: .infinity, count: 12)
        var highest = [Double](repeating: 0, count: 12)
        for _ in 0..<500 {
            var policy = TransientPolicy<ManualClock.Instant>(configuration)
            var now = Instant(offset: .zero)
            var action = policy.start(at: now, using: &random)
            for step in 0..<12 {
                guard case .wait(let deadline, .canary) = action else {
                    Issue.record("transient should wait for a canary, got \(action)")
                    return
                }
                let delay = now.duration(to: deadline).seconds
                let ceiling = min(300, Double(1 << step))
                #expect(delay >= 0 && delay <= ceiling, "step \(step): \(delay)s outside 0...\(ceiling)s")
                lowest[step] = min(lowest[step], delay / ceiling)
                highest[step] = max(highest[step], delay / ceiling)
                now = deadline
                action = policy.stepFinished(.failed(reason: "http503", retryAfter: nil), at: now, using: &random)
            }
        }
        // Steps 0-8 (1 s … 256 s): full jitter uses the whole range, not just its top half.
        #expect(lowest[..<9].allSatisfy { $0 < 0.05 })
        // Steps 9-11 are at the 300 s cap: between half of it and all of it, a steady cadence.
        #expect(lowest[9...].allSatisfy { $0 >= 0.5 && $0 < 0.55 })
        #expect(highest.allSatisfy { $0 > 0.95 })
    }

    @Test func theDefaultCapChecksAnOutageEveryOneToTwoSeconds() {
        var backoff = Backoff(ErrorBusConfiguration.Backoff())
        var random = SeededRandomNumberGenerator(seed: 11)
        let first = backoff.nextDelay(using: &random)
        #expect(first >= .zero && first <= .seconds(1))
        for _ in 0..<200 {
            let delay = backoff.nextDelay(using: &random)
            #expect(delay >= .seconds(1) && delay <= .seconds(2))
        }
    }

    @Test func backoffCeilingIsCappedWithoutOverflow() {
        let backoff = Backoff(.init(base: .seconds(1), factor: 2, cap: .seconds(300)))
        #expect(backoff.ceiling(forAttempt: 0) == .seconds(1))
        #expect(backoff.ceiling(forAttempt: 8) == .seconds(256))
        #expect(backoff.ceiling(forAttempt: 9) == .seconds(300))
        #expect(backoff.ceiling(forAttempt: 10_000) == .seconds(300))
    }

    @Test func transientCanarySuccessReleases() {
        var random = SeededRandomNumberGenerator(seed: 1)
        var policy = TransientPolicy<ManualClock.Instant>(.init())
        _ = policy.start(at: .seconds(0), using: &random)
        #expect(policy.stepFinished(.succeeded, at: .seconds(1), using: &random) == .release)
    }

    @Test func onlyACanaryTheServerScheduledSkipsTheRetryBudget() {
        var random = SeededRandomNumberGenerator(seed: 5)
        func failure(_ category: ErrorCategory) -> Failure {
            Failure(category: category, scope: "api", cause: "test", service: "sync", text: OperatorText(title: "t", message: "m"))
        }
        let configuration = ErrorBusConfiguration()
        var hinted = IncidentPolicy<Instant>(for: failure(.rateLimited(retryAfter: .seconds(1))), configuration: configuration, canProbe: true)
        _ = hinted.start(with: failure(.rateLimited(retryAfter: .seconds(1))), at: .seconds(0), using: &random)
        #expect(!hinted.canaryDrawsOnBudget)
        // The next wait is a back-off of our own: that canary pays.
        _ = hinted.stepFinished(.failed(reason: "429", retryAfter: nil), at: .seconds(2), using: &random)
        #expect(hinted.canaryDrawsOnBudget)
        var unhinted = IncidentPolicy<Instant>(for: failure(.rateLimited(retryAfter: nil)), configuration: configuration, canProbe: true)
        _ = unhinted.start(with: failure(.rateLimited(retryAfter: nil)), at: .seconds(0), using: &random)
        #expect(unhinted.canaryDrawsOnBudget)
        var transient = IncidentPolicy<Instant>(for: failure(.transient), configuration: configuration, canProbe: true)
        _ = transient.start(with: failure(.transient), at: .seconds(0), using: &random)
        #expect(transient.canaryDrawsOnBudget)
    }

    @Test func rateLimitHintsAreClampedAndOnlyEverExtended() {
        var random = SeededRandomNumberGenerator(seed: 3)
        let configuration = ErrorBusConfiguration.RateLimit(minimum: .seconds(1), maximum: .seconds(3_600), jitter: 0)
        func firstDeadline(for hint: Duration) -> PolicyAction<Instant> {
            var policy = RateLimitPolicy<ManualClock.Instant>(configuration, backoff: .init())
            return policy.start(at: .seconds(0), retryAfter: hint, using: &random)
        }
        #expect(firstDeadline(for: .milliseconds(10)) == .wait(until: .seconds(1), then: .canary))
        #expect(firstDeadline(for: .seconds(86_400)) == .wait(until: .seconds(3_600), then: .canary))
        #expect(firstDeadline(for: .seconds(30)) == .wait(until: .seconds(30), then: .canary))

        var jittered = RateLimitPolicy<ManualClock.Instant>(.init(), backoff: .init())
        for _ in 0..<1_000 {
            guard case .wait(let deadline, _) = jittered.start(at: .seconds(0), retryAfter: .seconds(10), using: &random) else {
                Issue.record("rate limit should wait")
                return
            }
            // Never before the hint; within half of it more (the default jitter).
            #expect(deadline >= .seconds(10) && deadline <= .seconds(15))
        }
    }

    @Test func reachabilityGateGrowsToItsCapJitteredAndProbesSoonOnNetworkChange() {
        var random = SeededRandomNumberGenerator(seed: 3)
        var gate = ReachabilityGate<ManualClock.Instant>(.init())
        var now = Instant.seconds(0)
        guard case .wait(let first, .probe) = gate.start(at: now, using: &random) else {
            Issue.record("the gate should wait for its first probe")
            return
        }
        #expect(first <= .seconds(1))
        var intervals: [Duration] = []
        var waits: [Duration] = []
        for _ in 0..<7 {
            now = now.advanced(by: gate.interval)
            guard case .wait(let deadline, .probe) = gate.stepFinished(.failed(reason: "refused", retryAfter: nil), at: now, using: &random) else {
                Issue.record("a failed probe should schedule another")
                return
            }
            intervals.append(gate.interval)
            waits.append(now.duration(to: deadline))
        }
        #expect(intervals == [2, 4, 8, 16, 30, 30, 30].map { Duration.seconds($0) })
        // Full jitter: each wait anywhere from nothing to its interval, not the interval itself.
        #expect(zip(waits, intervals).allSatisfy { $0 >= .zero && $0 <= $1 })
        #expect(Set(zip(waits, intervals).map { $0 == $1 }) == [false])
        guard case .wait(let soon, .probe) = gate.networkChanged(at: now, using: &random) else {
            Issue.record("a network change should schedule a probe")
            return
        }
        #expect(now.duration(to: soon) <= .seconds(1))
        #expect(gate.stepFinished(.succeeded, at: now, using: &random) == .release)
    }

    @Test func aLocalCauseIsProbedAtLeastEveryLocalMaximumInterval() {
        var random = SeededRandomNumberGenerator(seed: 4)
        var gate = ReachabilityGate<ManualClock.Instant>(.init(), cause: "captivePortal")
        var now = Instant.seconds(0)
        _ = gate.start(at: now, using: &random)
        for _ in 0..<6 {
            now = now.advanced(by: gate.interval)
            _ = gate.stepFinished(.failed(reason: "portal", retryAfter: nil), at: now, using: &random)
        }
        #expect(gate.interval == .seconds(2))
        // A cause beyond the host grows to the full maximum.
        var remote = ReachabilityGate<ManualClock.Instant>(.init(), cause: "connectionRefused")
        for _ in 0..<6 { _ = remote.stepFinished(.failed(reason: "refused", retryAfter: nil), at: now, using: &random) }
        #expect(remote.interval == .seconds(30))
    }

    @Test func reauthenticationEscalatesOnRejectionAndBacksOffWhenUnavailable() {
        var random = SeededRandomNumberGenerator(seed: 5)
        var policy = ReauthenticationPolicy<ManualClock.Instant>(backoff: .init())
        #expect(policy.start() == .now(.reauthenticate))
        #expect(policy.stepFinished(.rejected(reason: "invalid_client"), at: .seconds(0), using: &random)
            == .needsOperator(reason: "invalid_client"))
        guard case .wait(let deadline, .reauthenticate) = policy.stepFinished(
            .failed(reason: "down", retryAfter: nil), at: .seconds(0), using: &random
        ) else {
            Issue.record("an unavailable authenticator should be asked again later")
            return
        }
        #expect(deadline <= .seconds(1))
        #expect(policy.stepFinished(.succeeded, at: .seconds(2), using: &random) == .release)
    }

    @Test func retryBudgetAllowsAFractionOfSuccessesPlusAFloor() {
        let configuration = ErrorBusConfiguration.RetryBudget(successRatio: 0.1, floorPerMinute: 6, capacity: 100)
        var budget = RetryBudget<ManualClock.Instant>(configuration, at: .seconds(0))
        func withdrawals(at seconds: Double, upTo attempts: Int = 50) -> Int {
            (0..<attempts).count { _ in budget.withdraw(at: .seconds(seconds)) }
        }
        // Starts with a minute's floor.
        #expect(withdrawals(at: 0) == 6)
        // A hundred successes pay for ten retries.
        budget.deposit(successes: 100)
        #expect(withdrawals(at: 0) == 10)
        // The floor refills one token every ten seconds.
        #expect(budget.nextToken(after: .seconds(0)) == .seconds(10))
        #expect(withdrawals(at: 9) == 0)
        #expect(withdrawals(at: 10) == 1)
        // Never beyond capacity.
        budget.deposit(successes: 1_000_000)
        #expect(budget.tokens == 100)
    }

    /// A retry costs a token, or one per second of the failed run it repeats (a large upload cut
    /// half way), at most the bucket, which it waits for whole.
    @Test func aRetryOfALongFailedRunCostsATokenPerSecondOfIt() {
        let configuration = ErrorBusConfiguration.RetryBudget(successRatio: 0.1, floorPerMinute: 6, capacity: 10)
        var budget = RetryBudget<ManualClock.Instant>(configuration, at: .seconds(0))
        #expect(budget.price(ofRetryAfterRun: .milliseconds(30)) == 1)
        #expect(budget.price(ofRetryAfterRun: .seconds(4)) == 4)
        #expect(budget.price(ofRetryAfterRun: .seconds(600)) == 10)
        // Six tokens to start: a four-second run's retry is paid, a second one is not.
        let first = budget.withdraw(at: .seconds(0), price: 4)
        #expect(first)
        #expect(budget.tokens == 2)
        let second = budget.withdraw(at: .seconds(0), price: 4)
        #expect(!second)
        #expect(budget.tokens == 2, "a refused price takes nothing")
        // Two more tokens from the floor: twenty seconds.
        #expect(budget.nextToken(after: .seconds(0), price: 4) == .seconds(20))
        let third = budget.withdraw(at: .seconds(20), price: 4)
        #expect(third)
        // A retry of a ten-minute run waits for the whole bucket.
        #expect(budget.nextToken(after: .seconds(20), price: budget.price(ofRetryAfterRun: .seconds(600))) == .seconds(120))
    }
}
