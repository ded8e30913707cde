import ErrorBus
import ErrorBusTesting
import Synchronization
import Testing

@Suite(.timeLimit(.minutes(1)))
struct EventStreamTests {
    /// How many times an operation ran.
    final class Runs: Sendable {
        private let count = Atomic(0)
        func next() -> Int { count.add(1, ordering: .relaxed).newValue }
    }

    /// A subscription never throws, and inside it `Failure` is still the bus's failure.
    @Test func aSubscriptionIsANonThrowingSequence() {
        #expect(EventSubscription.Failure.self == Never.self)
        #expect(EventSubscription.Element.self == BusEvent.self)
    }

    @Test func theCanarysCallerHasItsResultBeforeItsIncidentIsToldResolved() async throws {
        try await withRunningBus { bus, clock, events in
            let runs = Runs()
            let (outcomes, outcome) = AsyncStream.makeStream(of: (JobOutcome, [IncidentState]).self)
            _ = await bus.submit(.sync(1)) {
                if runs.next() == 1 { throw TestFailure(.transient, cause: "reset") }
            } completion: { result in
                // What the bus says of the incident at the moment the caller is given its result.
                outcome.yield((result, await bus.snapshot().incidents.map(\.state)))
                outcome.finish()
            }
            try await events.next(.policyScheduled)
            await clock.sleepers(atLeast: 1)
            clock.advanceToNextDeadline()
            var received = outcomes.makeAsyncIterator()
            let (result, incidentStates) = try #require(await received.next())
            guard case .succeeded = result else {
                Issue.record("the canary succeeded, its caller was told \(result)")
                return
            }
            // Still the canary's incident, not resolved yet: a subscriber that acts on the
            // resolution (cancels the caller, say) cannot change the result the caller is owed.
            #expect(incidentStates == [.canary])
            try await events.next(.incidentResolved)
        }
    }

    @Test func aStalledSubscriberLosesItsOldestEventsButDoesNotSlowReporting() async throws {
        try await withRunningBus { bus, _, events in
            let stalled = await bus.subscribe(bufferSize: 8)
            let incidents = 1_000
            for number in 0..<incidents {
                // Each new host opens an incident: an opened and a scheduled event each.
                await bus.report(Failure(TestFailure.transient, job: .sync(number, scope: "host-\(number)")))
            }
            let emitted = 2 * incidents
            #expect(stalled.droppedEvents == emitted - 8)

            // What the stalled subscriber still holds are the newest events.
            var kept: [BusEvent] = []
            for await event in stalled {
                kept.append(event)
                if kept.count == 8 { break }
            }
            #expect(kept.compactMap(\.incident?.fingerprint.scope).suffix(2) == ["host-999", "host-999"])

            // A subscriber that keeps up loses nothing.
            for _ in 0..<incidents { try await events.next(.policyScheduled) }
            #expect(events.seen.count == emitted)
            #expect(events.droppedEvents == 0)
        }
    }

    @Test func aSubscriptionStartsWithTheStateAtThatMoment() async throws {
        try await withRunningBus { bus, _, _ in
            await bus.report(Failure(TestFailure.transient, job: .sync(0)))
            let subscription = await bus.subscribe()
            #expect(subscription.initialSnapshot.incidents.count == 1)
            await bus.report(Failure(TestFailure.unreachable, job: .sync(1)))
            var iterator = subscription.makeAsyncIterator()
            #expect(await iterator.next()?.kind == .incidentOpened)
        }
    }
}
