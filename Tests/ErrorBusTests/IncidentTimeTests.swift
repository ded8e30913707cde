import ErrorBus
import ErrorBusTesting
import Foundation
import Testing

/// An incident's wall-clock times are recorded once, by the bus, when it opens and when it is
/// resolved: every reader (the store, the control API, the journal) gives the same ones. They are
/// read from the bus's injected clock (the wall-clock time of its start plus the time since), so
/// a manual clock moves them and nothing else does.
@Suite(.timeLimit(.minutes(1)))
struct IncidentTimeTests {
    @Test func openedAtAndClosedAtAreRecordedOnceByTheBus() async throws {
        try await withRunningBus { bus, clock, events in
            let later = Date()
            _ = await bus.submit(.sync(0)) { throw TestFailure.transient } completion: { _ in }
            let opened = try #require(try await events.next(.incidentOpened).incident)
            // The manual clock has not moved since the bus was made: its start's time.
            #expect(opened.openedAt <= later && later.timeIntervalSince(opened.openedAt) < 60)
            #expect(opened.closedAt == nil)

            // The manual clock moves an hour: the wall-clock time of the opening does not move.
            clock.advance(by: .seconds(3600))
            #expect(try await bus.incident(opened.id).openedAt == opened.openedAt)

            try await bus.discard(incident: opened.id)
            let resolved = try #require(try await events.next(.incidentResolved).incident)
            let closedAt = try #require(resolved.closedAt)
            #expect(closedAt == opened.openedAt.addingTimeInterval(3600))
            // Read again later, a resolved incident keeps the time it was closed.
            #expect(try await bus.incident(opened.id).closedAt == closedAt)
            #expect(resolved.age == .seconds(3600))
        }
    }
}
