import ErrorBusControl
import ErrorBusDaemon
import ErrorBusStore
import Foundation
import Glibc
@testable import Sandbox
import TestSupport
import Testing
import Varlink

extension Faults {
    /// The sandbox answers uploads with garbage, cut-off, gigantic, endless and trickled bodies:
    /// errorbusd classifies each as docs/http-failures.md says, stays within its memory and its
    /// request deadline, and delivers every file once the API behaves again.
    @Suite(.timeLimit(.minutes(2)))
    struct HostileAPI {
        struct Answer: CustomStringConvertible {
            var fault: String
            var category: Control.Category
            var cause: String
            /// `invalid` answers are dead letters until an operator retries them; the others
            /// park and go again by themselves.
            var deadLettered: Bool { category == .invalid }
            var description: String { fault }
        }

        static let answers: [Answer] = [
            // 200 text/html where JSON was expected.
            Answer(fault: #"{"route":"items","mode":"garbage"}"#, category: .invalid, cause: "undecodableResponse"),
            // 201 with a receipt for another item: no delivery, the file stays.
            Answer(fault: #"{"route":"items","mode":"wrongReceipt"}"#, category: .invalid, cause: "undecodableResponse"),
            // JSON announced, 26 of 4096 bytes, then the connection closes.
            Answer(fault: #"{"route":"items","mode":"truncated"}"#, category: .transient, cause: "connectionReset"),
            // application/json, but spaces: the right type, the wrong body.
            Answer(fault: #"{"route":"items","mode":"huge","bytes":1000}"#, category: .invalid, cause: "undecodableResponse"),
            // Five gigabytes announced.
            Answer(fault: #"{"route":"items","mode":"huge","bytes":5000000000}"#, category: .invalid, cause: "bodyTooLarge"),
            // Endless (chunked).
            Answer(fault: #"{"route":"items","mode":"huge"}"#, category: .invalid, cause: "bodyTooLarge"),
            // The head at once, then a piece of the body every 2.5 s (each within the 5 s read
            // timeout), for 40 s: past the 5 s request deadline.
            Answer(fault: #"{"route":"items","mode":"slow","delayMs":40000,"trickle":true}"#, category: .transient, cause: "deadlineExceeded"),
        ]

        static let memoryLimit = 200 << 20

        @Test func hostileAnswersAreClassifiedBoundedAndLoseNothing() async throws {
            try await DaemonIntegrationTests.withDaemon { sandbox, daemon in
                let pid = try daemon.current.processIdentifier
                var number = 0
                for answer in Self.answers {
                    try await sandbox.fault(answer.fault)
                    let first = number
                    let logged = try daemon.current.standardError.text.utf8.count
                    for _ in 0..<3 {
                        try daemon.drop("item-\(number).bin", content: DaemonIntegrationTests.content(number))
                        number += 1
                    }
                    // The incident this answer opened, once the store has its jobs' fate.
                    let incident = try await Self.incident(for: answer, daemon: daemon, loggedBefore: logged)
                    #expect(incident.category == answer.category, "\(answer)")
                    #expect(incident.cause == answer.cause, "\(answer)")
                    if answer.deadLettered {
                        let dead = try await ControlIntegrationTests.varlink(daemon) { try await $0.call(Control.listDeadLetters, .init()) }
                        #expect(dead.jobs.count == 3, "\(answer)")
                    }
                    // Still in the outbox, not at the API.
                    #expect(try daemon.outboxFiles().count == 3, "\(answer)")
                    let memory = try Memory(of: pid)
                    #expect(memory.resident < Self.memoryLimit, "\(answer): \(memory.resident) bytes resident")

                    try await sandbox.clearFaults()
                    if answer.deadLettered {
                        let retried = try await ControlIntegrationTests.varlink(daemon) { try await $0.call(Control.retry, .init(deadLetters: true)) }
                        #expect(retried.count == 3, "\(answer)")
                    }
                    try await DirectoryWatcher.wait(for: daemon.outbox) { $0.isEmpty }
                    let items = try await sandbox.items()
                    for delivered in first..<number {
                        #expect(items[DaemonIntegrationTests.key(of: DaemonIntegrationTests.content(delivered))] != nil, "\(answer): item \(delivered)")
                    }
                }
                let stats = try await sandbox.stats()
                #expect(stats.items.distinct == number)
                #expect(stats.items.keysReused == 0)
                let memory = try Memory(of: pid)
                print("hostile answers: errorbusd peak resident \(memory.peak >> 20) MiB")
                #expect(memory.peak < Self.memoryLimit)
            }
        }

        /// Waits for the incident that holds the jobs `answer` failed (its jobs parked or
        /// dead-lettered, as the store has them, or paced while the API served the earlier
        /// answers' jobs), through the control socket's history.
        static func incident(for answer: Answer, daemon: DaemonProcess, loggedBefore: Int) async throws -> Control.Incident {
            let expectedState: Control.JobState = answer.deadLettered ? .deadLettered : .parked
            if answer.deadLettered {
                try await daemon.waitForLog("set aside as a dead letter: ", count: 3 * (Self.answers.prefix { $0.fault != answer.fault }.filter(\.deadLettered).count + 1))
            } else {
                // Its own three, logged since its files were dropped: an earlier answer's jobs may
                // be parked again by their canaries meanwhile.
                let child = try daemon.current
                let met = await child.standardError.wait { log in
                    let since = String(decoding: log.utf8.dropFirst(loggedBefore), as: UTF8.self)
                    return ParkingLog.parked(in: since, under: nil) + since.components(separatedBy: " paced by its scope: ").count - 1 >= 3
                }
                try #require(met, "\(answer): errorbusd ended before its jobs were parked or paced")
            }
            let jobs = try await ControlIntegrationTests.varlink(daemon) { try await $0.call(Control.listJobs, .init(state: expectedState)) }
            // One incident for the three. Dead letters of one kind from one host are grouped for
            // a while, so an earlier answer's incident may be the one.
            let ids = Set(jobs.jobs.compactMap(\.incident))
            guard let id = ids.first else {
                // Paced, they wait in the queue for their back-off, in no incident: the one that
                // paced them is the latest of their cause.
                let incidents = try await ControlIntegrationTests.varlink(daemon) { try await $0.call(Control.listIncidents, .init(all: true)) }
                return try #require(incidents.incidents.filter { $0.cause == answer.cause }.max { $0.id < $1.id }, "\(answer): no incident of its cause among \(incidents.incidents.map { "\($0.id) \($0.category) \($0.cause) \($0.state)" })")
            }
            if ids.count != 1 {
                let incidents = try await ControlIntegrationTests.varlink(daemon) { try await $0.call(Control.listIncidents, .init(all: true)) }
                Issue.record("\(answer): jobs in incidents \(ids): \(incidents.incidents.map { "\($0.id) \($0.category) \($0.cause) \($0.title)" })")
            }
            return try await ControlIntegrationTests.varlink(daemon) { try await $0.call(Control.getIncident, .init(id: id)) }.incident
        }
    }
}
