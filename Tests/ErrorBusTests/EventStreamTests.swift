import ErrorBus
import ErrorBusTesting
import Testing

@Suite(.timeLimit(.minutes(1)))
struct EventStreamTests {
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
            for _ in 0..<incidents { await events.next(.policyScheduled) }
            #expect(events.seen.count == emitted)
            #expect(events.subscription.droppedEvents == 0)
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
