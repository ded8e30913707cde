import ErrorBus
import ErrorBusTesting
import Testing

/// Probes per scope and authenticators per realm, with the bus's own for the others.
@Suite(.timeLimit(.minutes(1)))
struct ScopedProbeTests {
    @Test func eachScopeIsProbedByItsOwnProbeOrTheBussOwn() async throws {
        let clock = ManualClock()
        let fallback = ScriptedProbe(clock: clock)
        let payments = ScriptedProbe(clock: clock)
        try await withRunningBus(clock: clock, probe: fallback) { bus, clock, events in
            await bus.setProbe(payments, forScope: "payments.test")
            await bus.report(Failure(TestFailure.unreachable, job: .sync(0, scope: "payments.test")))
            await bus.report(Failure(TestFailure.unreachable, job: .sync(1, scope: "api.test")))
            for _ in 0..<2 {
                let scheduled = try #require(try await events.next(.policyScheduled).incident?.next)
                clock.advance(by: scheduled.delay)
            }
            try await events.next(.incidentResolved)
            try await events.next(.incidentResolved)
            #expect(payments.callTimes.count == 1)
            #expect(fallback.callTimes.count == 1)
        }
    }

    @Test func aScopeWithoutAnyProbeIsTestedByACanary() async throws {
        let clock = ManualClock()
        let payments = ScriptedProbe(clock: clock)
        try await withRunningBus(clock: clock) { bus, clock, events in
            await bus.setProbe(payments, forScope: "payments.test")
            let runs = Counter()
            _ = await bus.submit(.sync(0, scope: "api.test")) {
                if runs.increment() == 1 { throw TestFailure.unreachable }
            } completion: { _ in }
            let scheduled = try #require(try await events.next(.policyScheduled).incident?.next)
            clock.advance(by: scheduled.delay)
            try await events.next(.incidentResolved)
            // The parked job itself went first, as the canary.
            #expect(runs.count == 2)
            #expect(payments.callTimes.isEmpty)
        }
    }

    @Test func eachRealmSignsInWithItsOwnAuthenticator() async throws {
        let fallback = ScriptedAuthenticator()
        let billing = ScriptedAuthenticator()
        try await withRunningBus(authenticator: fallback) { bus, _, events in
            await bus.setAuthenticator(billing, forRealm: "billing")
            await bus.report(Failure(TestFailure.unauthenticated, job: .sync(0, realm: "billing")))
            try await events.next(.incidentResolved)
            await bus.report(Failure(TestFailure.unauthenticated, job: .sync(1, realm: "api")))
            try await events.next(.incidentResolved)
            #expect(billing.callCount == 1)
            #expect(fallback.callCount == 1)
        }
    }
}
