import ErrorBus
import ErrorBusTesting
@testable import ExampleDaemon
import Logging
import Testing

/// The uploader on a bus that runs on a manual clock: no test sleeps, every wait is for an event.
@Suite(.timeLimit(.minutes(1)))
struct UploaderTests {
    let api = SimulatedAPI(host: "api.example.net", secret: "secret")
    let logger = Logger(label: "test", factory: { _ in SwiftLogNoOpLogHandler() })

    /// Credentials signed in already, so that the tests see the outage alone.
    func signedIn() async throws -> Credentials {
        let credentials = Credentials(api: api, secret: "secret")
        #expect(await credentials.reauthenticate(realm: "api") == .renewed)
        return credentials
    }

    // sample: test-outage
    @Test func anOutageIsOneIncidentAndEveryReportIsDelivered() async throws {
        let credentials = try await signedIn()
        await api.goDown()
        let clock = ManualClock()
        // The first probe finds the API down, the next one up.
        let probe = ScriptedProbe(clock: clock, answers: [.unreachable(reason: "connection refused")], otherwise: .reachable)
        try await withRunningBus(configuration: .forTesting, clock: clock, probe: probe) { bus, clock, events in
            let uploader = Uploader(bus: bus, api: api, credentials: credentials, logger: logger)
            try await withThrowingDiscardingTaskGroup { group in
                group.addTask { await uploader.run() }
                for number in 1...5 {
                    uploader.enqueue(Report(id: "report-\(number)", body: "reading \(number)"))
                }
                // The first upload fails and opens the incident; the others park without running.
                await bus.waitUntilParked(5)
                let opened = try await events.next(.incidentOpened)
                #expect(opened.incident?.category == .unreachable)

                // Move the clock by what the bus scheduled: the first probe fails…
                let firstProbe = try await events.next(.policyScheduled)
                clock.advance(by: try #require(firstProbe.incident?.next?.delay))
                try await events.next(.probeFailed)
                await api.comeBack()
                // …and the next one, scheduled after the failure, finds the API back.
                let secondProbe = try await events.next(.policyScheduled)
                clock.advance(by: try #require(secondProbe.incident?.next?.delay))

                let resolved = try #require(try await events.next(.incidentResolved).incident)
                #expect(resolved.resolution == .recovered)
                #expect(resolved.released == 5)
                #expect(events.count(of: .incidentOpened) == 1)
                // Released jobs run side by side: in any order.
                #expect(await uploader.delivered.sorted() == (1...5).map { "report-\($0)" })
                group.cancelAll()
            }
        }
    }
    // end sample

    // sample: test-fail-fast
    @Test func sendNowAnswersAtOnceWhileTheAPIIsDown() async throws {
        let credentials = try await signedIn()
        await api.goDown()
        let clock = ManualClock()
        try await withRunningBus(configuration: .forTesting, clock: clock, probe: ScriptedProbe(clock: clock)) { bus, clock, events in
            let uploader = Uploader(bus: bus, api: api, credentials: credentials, logger: logger)
            // The attempt fails and opens an incident; the caller is answered, not parked.
            let first = await uploader.sendNow(Report(id: "urgent-1", body: "now"))
            let incident = try #require(try await events.next(.incidentOpened).incident)
            #expect(first == .queued(behind: incident.id))

            // While the incident holds the API, the next one does not even run.
            let requests = await api.requests
            let second = await uploader.sendNow(Report(id: "urgent-2", body: "now"))
            #expect(second == .queued(behind: incident.id))
            #expect(await api.requests == requests)
            #expect(clock.now == ManualClock.Instant(offset: .zero))
            #expect(await bus.snapshot().parkedJobs == 0)
        }
    }
    // end sample
}
