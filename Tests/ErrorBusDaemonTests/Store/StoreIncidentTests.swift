import ErrorBusDaemon
import ErrorBusStore
import ErrorBusSupport
import Foundation
import Testing

@testable import ErrorBus

@Suite struct StoreIncidentTests {
    private func snapshot(
        _ id: UInt64,
        state: IncidentState = .waiting,
        failures: Int = 1,
        age: Duration = .seconds(30),
        openedAt: Date = Date(timeIntervalSince1970: 1_700_000_000),
        resolution: Resolution? = nil
    ) -> IncidentSnapshot {
        IncidentSnapshot(
            id: IncidentID(rawValue: id),
            uuid: UUID(uuidString: "6F1C2A36-0C0B-4B8E-9D55-2C7E3B1A9F00")!,
            fingerprint: Fingerprint(scope: "api.example.net", kind: .rateLimited, cause: "http429"),
            category: .rateLimited(retryAfter: .seconds(20)),
            service: "sync",
            text: OperatorText(title: "Rate limited", message: "api.example.net asked to slow down.", next: "Waiting 20 s."),
            state: state,
            failures: failures,
            parked: 12,
            parkedByService: ["sync": 12],
            released: 3,
            deadLettered: 0,
            age: age,
            openedAt: openedAt,
            closedAt: resolution == nil ? nil : openedAt.addingTimeInterval(age.timeInterval),
            next: nil,
            resolution: resolution
        )
    }

    @Test func anIncidentIsInsertedThenUpdatedWithTheBusesTimes() async throws {
        try await StoreTestDirectory.withStore { store, _ in
            let openedAt = Date(timeIntervalSince1970: 1_700_000_000.25)
            let start = openedAt.addingTimeInterval(30)
            let opened = try store.recordIncident(snapshot(5, age: .seconds(30), openedAt: openedAt), at: start)
            #expect(opened.openedAt == openedAt)
            #expect(opened.uuid == "6f1c2a36-0c0b-4b8e-9d55-2c7e3b1a9f00")
            #expect(opened.closedAt == nil && opened.resolution == nil)
            #expect(opened.category == "rateLimited")
            #expect(opened.categoryDetail == ErrorCategory.rateLimited(retryAfter: .seconds(20)).description)
            #expect(opened.scope == "api.example.net" && opened.cause == "http429" && opened.service == "sync")
            #expect(opened.title == "Rate limited" && opened.next == "Waiting 20 s.")
            #expect(opened.parked == 12 && opened.released == 3 && opened.failures == 1)
            #expect(try store.incident(5) == opened)

            // Recorded 90 s later, resolved after 2 minutes open: the times are the bus's, whenever
            // the record is written.
            let resolved = try store.recordIncident(
                snapshot(5, state: .resolved, failures: 400, age: .seconds(120), openedAt: openedAt, resolution: .recovered),
                at: start.addingTimeInterval(90)
            )
            #expect(resolved.openedAt == opened.openedAt)
            #expect(resolved.closedAt == openedAt.addingTimeInterval(120))
            #expect(resolved.updatedAt == start.addingTimeInterval(90))
            #expect(resolved.state == .resolved && resolved.resolution == .recovered && resolved.failures == 400)
            #expect(try store.incident(5) == resolved)
            #expect(try store.incidents().count == 1)
        }
    }

    @Test func historyIsNewestFirstAndTheLastIDSurvivesARestart() async throws {
        try await StoreTestDirectory.with { directory in
            let store = try JobStore(directory: directory, logger: StoreTestDirectory.logger())
            #expect(try store.lastIncidentID() == nil)
            for id in [3, 1, 2] as [UInt64] { try store.recordIncident(snapshot(id)) }
            #expect(try store.incidents().map(\.id) == [3, 2, 1])
            #expect(try store.incidents(limit: 2).map(\.id) == [3, 2])
            try await store.close()

            let restarted = try JobStore(directory: directory, logger: StoreTestDirectory.logger())
            #expect(try restarted.lastIncidentID() == 3)
            try await restarted.close()
        }
    }

    @Test func pruningKeepsTheNewestAndEveryOpenIncident() async throws {
        try await StoreTestDirectory.withStore { store, _ in
            for id in 1...5 as ClosedRange<UInt64> {
                try store.recordIncident(snapshot(id, state: .resolved, resolution: .recovered))
            }
            try store.recordIncident(snapshot(2))  // open again: kept whatever its age
            #expect(try store.pruneIncidents(keepingLatest: 2) == 2)
            #expect(try store.incidents().map(\.id) == [5, 4, 2])
            // At least one is kept, so the numbering never goes back.
            #expect(try store.pruneIncidents(keepingLatest: 0) == 1)
            #expect(try store.lastIncidentID() == 5)
        }
    }
}
