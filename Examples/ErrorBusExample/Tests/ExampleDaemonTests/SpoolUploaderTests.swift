import ErrorBus
import ErrorBusTesting
@testable import ExampleDaemon
import Foundation
import Testing

/// A queue of the library user's own, on disk: the bus decides, the spool keeps every report.
@Suite(.timeLimit(.minutes(1)))
struct SpoolUploaderTests {
    let api = SimulatedAPI(host: "api.example.net", secret: "secret")

    // sample: test-durable-queue
    @Test func anOutageParksTheReportsInTheSpoolAndTheBusHoldsNone() async throws {
        let credentials = Credentials(api: api, secret: "secret")
        #expect(await credentials.reauthenticate(realm: "api") == .renewed)
        await api.goDown()
        let directory = FileManager.default.temporaryDirectory.appending(path: "spool-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: directory) }
        let clock = ManualClock()
        let probe = ScriptedProbe(clock: clock, answers: [], otherwise: .reachable)
        try await withRunningBus(configuration: .forTesting, clock: clock, probe: probe) { bus, clock, events in
            let spool = try SpoolUploader(directory: directory, bus: bus, api: api, credentials: credentials)
            await bus.setParkedJobSource(spool, forService: SpoolUploader.service)
            for number in 1...5 {
                try spool.enqueue(Report(id: "report-\(number)", body: "reading \(number)"))
            }
            await spool.sendQueued()
            let incident = try #require(try await events.next(.incidentOpened).incident)
            // Every report waits in the spool, under the incident; the bus holds none.
            #expect(spool.reports(in: "parked/\(incident.id)") == (1...5).map { "report-\($0)" })
            #expect(await bus.snapshot().parkedJobs == 0)

            // The API comes back; the probe finds it, and the incident gives the reports back to
            // the spool, which sends them; it ends once they are sent.
            await api.comeBack()
            clock.advance(by: try #require(try await events.next(.policyScheduled).incident?.next?.delay))
            #expect(try await events.next(.incidentResolved).incident?.resolution == .recovered)
            #expect(spool.reports(in: "sent") == (1...5).map { "report-\($0)" })
        }
    }
    // end sample
}
