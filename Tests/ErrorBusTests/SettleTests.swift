import ErrorBus
import ErrorBusTesting
import Testing

/// A cause that flaps (the API down a few seconds, up a few seconds, down again) is one incident:
/// one whose cause went away stays open, holding nothing, for the settle window.
@Suite(.timeLimit(.minutes(1)))
struct SettleTests {
    @Test func aCauseThatComesBackWithinTheSettleWindowIsTheSameIncident() async throws {
        var configuration = ErrorBusConfiguration.forTesting
        configuration.settleWindow = .seconds(30)
        try await withRunningBus(configuration: configuration) { bus, clock, events in
            let down = Flag(true)
            let operation: @Sendable () async throws -> Void = { if down.isSet { throw TestFailure.transient } }
            _ = await bus.submit(.sync(0), operation: operation) { _ in }
            let opened = try #require(try await events.next(.incidentOpened).incident)

            // Up: its job goes, and it settles, holding nothing back.
            down.set(false)
            clock.advance(by: try #require(try await events.next(.policyScheduled).incident?.next?.delay))
            try await events.next(.releaseStarted)
            await bus.waitUntilSettled(opened.id)
            guard case .completed = await bus.submit(.sync(1), operation: operation, completion: { _ in }) else {
                Issue.record("a settling incident should hold nothing back")
                return
            }

            // Down again within the window: the same incident, not a new one. Its first failures
            // after so few runs may be a share of the scope's runs failing (it paces); a dozen
            // jobs failing in a row are an outage (it holds the scope again).
            down.set(true)
            for number in 2..<14 {
                guard case .parked(opened.id) = await bus.submit(.sync(number), operation: operation, completion: { _ in }) else {
                    Issue.record("the cause coming back should be incident \(opened.id) again")
                    return
                }
            }
            let again = try await bus.incident(opened.id)
            #expect(again.state == .waiting)
            #expect(again.failures == 11, "ten jobs failed in a row before it held; the others waited")

            // Up again, and the window passes without it: recovered, once.
            down.set(false)
            clock.advance(by: try #require(try await events.next(.policyScheduled).incident?.next?.delay))
            await bus.waitUntilSettled(opened.id)
            clock.advance(by: .seconds(30))
            let resolved = try #require(try await events.next(.incidentResolved).incident)
            #expect(resolved.id == opened.id)
            #expect(resolved.resolution == .recovered)
            #expect(events.count(of: .incidentOpened) == 1)
            #expect(await bus.snapshot().incidents.isEmpty)
        }
    }
}

extension ErrorBus {
    /// Returns once incident `id` settles (or is gone).
    fileprivate func waitUntilSettled(_ id: IncidentID) async {
        while let incident = try? incident(id), incident.state != .settling, incident.resolution == nil {
            await Task.yield()
        }
    }
}
