@testable import ErrorBus
@testable import ErrorBusDaemon
import ErrorBusStore
import Foundation
import Logging
import Systemd
import Testing
import TestSupport

/// The incident story as the real systemd-journald stores it: one entry per lifecycle step with
/// its MESSAGE_ID and ERRORBUS_* fields, read back with journalctl.
@Suite(.timeLimit(.minutes(1)))
struct IncidentJournalTests {
    /// A bus whose incident log writes to the real journal under an identifier of its own, with
    /// a store in a temporary directory (returned so that it lives as long as the test).
    static func journaledBus() throws -> (identifier: String, store: JobStore, bus: ErrorBus, log: IncidentLog, directory: TemporaryDirectory) {
        try Journald.ensureRunning()
        let identifier = "errorbus-test-\(UInt32.random(in: 0...UInt32.max))"
        let writer = JournalWriter()
        var logger = Logger(label: "errorbusd") { JournalLogHandler(label: $0, writer: writer, syslogIdentifier: identifier) }
        logger.logLevel = .info
        let directory = try TemporaryDirectory()
        let store = try JobStore(directory: directory.path, logger: logger)
        let bus = ErrorBus(logger: logger)
        return (identifier, store, bus, IncidentLog(bus: bus, store: store, logger: logger), directory)
    }

    @Test func aBurstOf100000FailuresWithOneCauseIsTwoJournalEntries() async throws {
        let (identifier, store, bus, log, directory) = try Self.journaledBus()
        defer { withExtendedLifetime(directory) {} }  // the store's directory, until the test ends
        let events = await bus.subscribe()

        let failure = Failure(
            category: .unreachable,
            scope: "api.example.net",
            cause: "connectionRefused",
            service: "sync",
            text: OperatorText(title: "API refused the connection", message: "api.example.net:443 refused the connection.")
        )
        var incidents = Set<IncidentID>()
        for _ in 0..<100_000 {
            if let id = await bus.report(failure) { incidents.insert(id) }
        }
        let incident = try #require(incidents.first)
        #expect(incidents.count == 1)
        try await bus.discard(incident: incident)

        // The bridge sees every event of the burst; it writes only lifecycle steps.
        for await event in events {
            log.record(event)
            if event.kind == .incidentResolved { break }
        }

        // journald handles datagrams in order: once the last step is there, all of them are.
        _ = try await Journalctl.entries(["SYSLOG_IDENTIFIER=\(identifier)", "MESSAGE_ID=\(IncidentLog.resolved)"], atLeast: 1)
        let entries = try await Journalctl.entries(["SYSLOG_IDENTIFIER=\(identifier)", "ERRORBUS_INCIDENT=\(incident)"], atLeast: 2)
        #expect(entries.count == 2)
        let opened = try #require(entries.first { $0["MESSAGE_ID"] == IncidentLog.opened })
        #expect(opened["ERRORBUS_SERVICE"] == "sync")
        #expect(opened["ERRORBUS_CATEGORY"] == "unreachable")
        #expect(opened["ERRORBUS_SCOPE"] == "api.example.net")
        #expect(opened["PRIORITY"] == "4")
        // The first probe is planned: when, on the wall clock, in microseconds.
        let now = Int64(Date().timeIntervalSince1970 * 1_000_000)
        let next = try #require(opened["ERRORBUS_NEXT_ATTEMPT_USEC"].flatMap { Int64($0) })
        #expect(next > now - 60_000_000 && next < now + 3_600_000_000)
        let resolved = try #require(entries.first { $0["MESSAGE_ID"] == IncidentLog.resolved })
        #expect(resolved["ERRORBUS_FAILURES"] == "100000")
        #expect(resolved["ERRORBUS_JOBS"] == "0")
        #expect(resolved["MESSAGE"]?.contains("100000 failures absorbed") == true)
        try await store.close()
    }

    @Test func anOperatorsPauseIsToldAsSuchAndOneIsSingular() async throws {
        let (identifier, store, bus, log, directory) = try Self.journaledBus()
        defer { withExtendedLifetime(directory) {} }  // the store's directory, until the test ends
        let events = await bus.subscribe()

        let paused = await bus.pause("sync")
        try await bus.discard(incident: paused)
        for await event in events {
            log.record(event)
            if event.kind == .incidentResolved { break }
        }
        let entries = try await Journalctl.entries(["SYSLOG_IDENTIFIER=\(identifier)", "ERRORBUS_INCIDENT=\(paused)"], atLeast: 2)
        // Not "fatal": nothing failed, an operator paused the service.
        #expect(entries.allSatisfy { $0["ERRORBUS_CATEGORY"] == "paused" }, "\(entries)")

        let failure = Failure(category: .transient, scope: "api.example.net", cause: "reset", service: "sync",
                              text: OperatorText(title: "Reset", message: "The connection was reset."))
        let one = try #require(await bus.report(failure))
        try await bus.discard(incident: one)
        for await event in events {
            log.record(event)
            if event.kind == .incidentResolved, event.incident?.id == one { break }
        }
        let resolved = try await Journalctl.entries(["SYSLOG_IDENTIFIER=\(identifier)", "ERRORBUS_INCIDENT=\(one)", "MESSAGE_ID=\(IncidentLog.resolved)"], atLeast: 1)
        #expect(resolved.first?["MESSAGE"]?.contains("1 failure absorbed, 0 jobs released") == true, "\(resolved)")
        try await store.close()
    }

    /// Two hosts' errorbusd both number their first incident 1; `ERRORBUS_INCIDENT_ID` tells the
    /// two apart in a journal that gathers both, and is the same on every entry of one incident.
    @Test func everyIncidentEntryCarriesAUUIDThatNoOtherIncidentHas() async throws {
        let hostA = try Self.journaledBus()
        let hostB = try Self.journaledBus()
        defer { withExtendedLifetime((hostA.directory, hostB.directory)) {} }
        let failure = Failure(category: .transient, scope: "api.example.net", cause: "reset", service: "sync",
                              text: OperatorText(title: "Reset", message: "The connection was reset."))
        var uuids: [String: Set<String>] = [:]
        var numbers: [IncidentID] = []
        for host in [hostA, hostB] {
            let events = await host.bus.subscribe()
            // Two incidents on each host, one after the other.
            for _ in 0..<2 {
                let incident = try #require(await host.bus.report(failure))
                numbers.append(incident)
                try await host.bus.discard(incident: incident)
                for await event in events {
                    host.log.record(event)
                    if event.kind == .incidentResolved, event.incident?.id == incident { break }
                }
                let entries = try await Journalctl.entries(["SYSLOG_IDENTIFIER=\(host.identifier)", "ERRORBUS_INCIDENT=\(incident)"], atLeast: 2)
                #expect(entries.count == 2, "\(entries)")
                let told = Set(entries.compactMap { $0["ERRORBUS_INCIDENT_ID"] })
                #expect(entries.allSatisfy { $0["ERRORBUS_INCIDENT_ID"] != nil }, "\(entries)")
                #expect(told.count == 1, "one incident, one UUID: \(told)")
                let uuid = try #require(told.first)
                #expect(UUID(uuidString: uuid) != nil && uuid == uuid.lowercased(), "\(uuid)")
                // The history keeps it, for the entry that ends an incident a run left open.
                #expect(try host.store.incident(incident.rawValue)?.uuid == uuid)
                uuids["\(host.identifier) \(incident)"] = told
            }
            try await host.store.close()
        }
        // The numbers repeat from host to host; the UUIDs do not.
        #expect(numbers.map(\.rawValue) == [1, 2, 1, 2])
        #expect(Set(uuids.values.compactMap(\.first)).count == 4, "\(uuids)")
    }

    /// Every step of an incident's story carries its UUID: opened, needs an operator, resolved,
    /// ended with errorbusd's run.
    @Test func everyStepsFieldsCarryTheUUID() throws {
        let uuid = UUID()
        let snapshot = IncidentSnapshot(
            id: IncidentID(rawValue: 7), uuid: uuid,
            fingerprint: Fingerprint(scope: "api.example.net", kind: .unauthenticated, cause: "http401"),
            category: .unauthenticated, service: "sync",
            text: OperatorText(title: "Rejected", message: "The token was rejected."),
            state: .needsOperator, failures: 3, parked: 2, parkedByService: ["sync": 2], released: 0, deadLettered: 0,
            age: .seconds(5), openedAt: Date(), closedAt: nil, next: nil, resolution: nil
        )
        for kind in [BusEvent.Kind.incidentOpened, .escalated, .incidentResolved] {
            let fields = IncidentLog.journalFields(of: BusEvent(kind: kind, incident: snapshot), snapshot)
            #expect(fields["ERRORBUS_INCIDENT_ID"] == "\(uuid.uuidString.lowercased())", "\(kind)")
            #expect(fields["ERRORBUS_INCIDENT"] == "7")
        }
        var stored = StoredIncident(snapshot)
        #expect(IncidentLog.fields(ofEnded: stored)["ERRORBUS_INCIDENT_ID"] == "\(uuid.uuidString.lowercased())")
        // An incident an older errorbusd recorded has none, and its entry goes without.
        stored.uuid = nil
        #expect(IncidentLog.fields(ofEnded: stored)["ERRORBUS_INCIDENT_ID"] == nil)
    }
}
