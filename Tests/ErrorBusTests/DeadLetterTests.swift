import ErrorBus
import ErrorBusTesting
import Testing

@Suite(.timeLimit(.minutes(1)))
struct DeadLetterTests {
    @Test func invalidJobsAreDeadLetteredWithTheirReasonAndGroupedByCause() async throws {
        try await withRunningBus { bus, clock, events in
            let tooLarge = TestFailure(.invalid(reason: "payload exceeds 10 MiB"), cause: "http413")
            let rejected = TestFailure(.invalid(reason: "field 'name' is required"), cause: "http422")
            var stops: [JobStopped] = []
            for number in 0..<6 {
                let failure = number < 5 ? rejected : tooLarge
                do throws(JobStopped) {
                    _ = try await bus.perform(.sync(number)) { () async throws -> Void in throw failure }
                    Issue.record("an invalid job must not succeed")
                } catch {
                    stops.append(error)
                }
            }
            #expect(stops.allSatisfy { $0.reason == .deadLettered && $0.evaluation == .cancel })
            #expect(stops.first?.failure?.category == .invalid(reason: "field 'name' is required"))
            #expect(Set(stops.prefix(5).map(\.incident)).count == 1)
            #expect(stops[5].incident != stops[0].incident)

            let snapshot = await bus.snapshot()
            #expect(snapshot.incidents.map(\.deadLettered) == [5, 1])
            #expect(snapshot.incidents.allSatisfy { $0.state == .collecting && $0.parked == 0 })
            #expect(snapshot.parkedJobs == 0)

            // Dead letters hold nothing back: the next job of the scope runs.
            let next = await bus.submit(.sync(99)) {} completion: { _ in }
            guard case .completed = next else {
                Issue.record("invalid incidents must not hold the scope, got \(next)")
                return
            }

            clock.advance(by: .seconds(60))
            try await events.next(.incidentResolved)
            let closed = try await events.next(.incidentResolved)
            #expect(closed.incident?.resolution == .closed)
            #expect(events.count(of: .jobDeadLettered) == 6)
            #expect(await bus.snapshot().incidents.isEmpty)
        }
    }

    @Test func aSubscriberSeesTheIncidentOpenedBeforeTheJobDeadLetteredUnderIt() async throws {
        try await withRunningBus { bus, _, events in
            let rejected = TestFailure(.invalid(reason: "field 'name' is required"), cause: "http422")
            do throws(JobStopped) {
                _ = try await bus.perform(.sync(1)) { () async throws -> Void in throw rejected }
            } catch {}
            let deadLettered = try await events.next(.jobDeadLettered)
            let kinds = events.seen.map(\.kind)
            #expect(kinds.firstIndex(of: .incidentOpened).map { $0 < kinds.count - 1 } == true, "\(kinds)")
            #expect(deadLettered.incident?.id == events.seen.first { $0.kind == .incidentOpened }?.incident?.id)
        }
    }
}
