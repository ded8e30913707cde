@testable import ErrorBus
@testable import ErrorBusDaemon
import Foundation
import Testing

/// The `STATUS=` line, which `systemctl status` and `errorbusctl status` show: one clause per
/// kind of trouble, however many incidents share it.
@Suite struct StatusLineTests {
    static func incident(_ id: UInt64, scope: String = "api.example.net", parked: Int = 1) -> IncidentSnapshot {
        IncidentSnapshot(
            id: IncidentID(rawValue: id), uuid: UUID(),
            fingerprint: Fingerprint(scope: scope, kind: .transient, cause: "http500"),
            category: .transient, service: "sync",
            text: OperatorText(title: "Server error", message: "The API answered 500."),
            state: .needsOperator, failures: 3, parked: parked, parkedByService: ["sync": parked], released: 0, deadLettered: 0,
            age: .seconds(90), openedAt: Date(), closedAt: nil, next: nil, resolution: nil
        )
    }

    static func snapshot(_ incidents: [IncidentSnapshot]) -> BusSnapshot {
        BusSnapshot(
            incidents: incidents, recentlyResolved: [], parkedJobs: 0, parkedByService: [:], waitingForBudget: 0,
            heldByService: [:], retryBudgetTokens: 10, overflowedJobs: 0, concurrency: [], isRunning: true
        )
    }

    /// Twenty files each set aside on its own, and one outage elsewhere: two clauses, the first
    /// counted, not twenty-one.
    @Test func identicalClausesAreToldOnceWithTheirCount() {
        let alike = (1...20).map { Self.incident($0) }
        let other = Self.incident(21, scope: "auth.example.net", parked: 7)
        let line = StatusLine.render(ParkedJobs(Self.snapshot(alike + [other])))
        let one = StatusLine.render(alike[0])
        #expect(line == "20 incidents, each: \(one); \(StatusLine.render(other))", "\(line)")
        // One incident is told as it was.
        #expect(StatusLine.render(ParkedJobs(Self.snapshot([other]))) == StatusLine.render(other))
    }

    /// sync's jobs parked in the store under an incident are told with those the bus keeps
    /// under it, and counted in the total and the service's.
    @Test func theStoresParkedJobsAreToldWithTheBuss() {
        let parked = ParkedJobs(Self.snapshot([Self.incident(4, parked: 7)]), stored: [4: 5, 9: 2])
        #expect(StatusLine.render(parked).hasPrefix("sync: 12 parked, "), "\(StatusLine.render(parked))")
        #expect(parked.of(service: "sync") == 7 && parked.of(service: "loader") == 0 && parked.total == 7)
        #expect(parked.holds(Self.incident(9, parked: 0), jobsOf: "sync") && !parked.holds(Self.incident(9, parked: 0), jobsOf: "loader"))
    }
}
