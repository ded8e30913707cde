import ErrorBusDaemon
import ErrorBusStore
import Foundation
import Glibc
import Testing

/// `kill -9` at random moments: a real process changes jobs as fast as it can and reports each
/// committed change; after SIGKILL the database must be sound and hold every reported change.
@Suite struct StoreCrashTests {
    @Test(.timeLimit(.minutes(2)))
    func sigkillAtRandomMomentsLosesNoCommittedChange() async throws {
        try await StoreTestDirectory.with { directory in
            let state = directory + "/state"
            var generator = SystemRandomNumberGenerator()
            // Round 0 is killed as soon as it is up, round 1 without waiting at all (while it
            // starts, maybe while SQLite recovers the WAL the previous round left); the others
            // after a random number of reported changes.
            for round in 0..<8 {
                let target: Int? =
                    switch round {
                    case 0: 1
                    case 1: nil
                    default: Int.random(in: 2...12_000, using: &generator)
                    }
                let helper = try HelperProcess(["crash", state, "r\(round)"], standardError: directory + "/stderr-\(round)")
                if let target {
                    let reached = await helper.waitForLines(target)
                    let standardError = (try? String(contentsOfFile: directory + "/stderr-\(round)", encoding: .utf8)) ?? ""
                    try #require(reached, "round \(round): the helper stopped before \(target) lines: \(standardError)")
                }
                helper.kill()
                let status = await helper.waitForExit()
                #expect(status == 128 + SIGKILL, "round \(round): exit status \(status)")

                let reported = Self.lastReported(helper.lines)
                let store = try JobStore(directory: state, logger: StoreTestDirectory.logger())
                #expect(try store.checkIntegrity() == ["ok"], "round \(round)")
                var checked = 0
                for (id, report) in reported {
                    let job = try store.job(id)
                    #expect(
                        job.map { report.isSatisfied(by: $0) } == true,
                        "round \(round), after \(target.map(String.init) ?? "no") lines: \(id) reported \(report), stored \(job.map { "\($0.state), attempts \($0.attempts)" } ?? "missing")"
                    )
                    checked += 1
                }
                if let target, target > 1 { #expect(checked > 0, "round \(round): nothing to check") }
                try await store.close()
            }

            // What the daemon does at its next start.
            let store = try JobStore(directory: state, logger: StoreTestDirectory.logger())
            try store.requeueInterrupted()
            let counts = try store.counts()
            #expect(counts.inFlight == 0)
            #expect(try store.checkIntegrity() == ["ok"])
            try await store.close()
        }
    }

    /// The last change the helper reported for each job.
    private static func lastReported(_ lines: [String]) -> [String: Report] {
        var reports: [String: Report] = [:]
        for line in lines {
            let parts = line.split(separator: " ", maxSplits: 1)
            guard parts.count == 2, let report = Report(rawValue: String(parts[0])) else { continue }
            reports[String(parts[1])] = report
        }
        return reports
    }

    /// A change the helper reported (see `CrashLoop`), and what the database may hold after it:
    /// that change, or one the helper makes later on the same job. (The next round's
    /// `requeueInterrupted` runs only after this round's check.)
    private enum Report: String, CustomStringConvertible {
        case queued = "Q"
        case inFlight = "F"
        case delivered = "D"
        case discarded = "Z"
        case deadLettered = "X"
        case requeued = "R"

        var description: String { rawValue }

        func isSatisfied(by job: OutboxJob) -> Bool {
            let requeued = job.state == .queued && job.attempts == 1 && job.lastError != nil
            switch self {
            case .queued: return true
            case .inFlight: return [.inFlight, .delivered, .discarded, .deadLettered].contains(job.state) || requeued
            case .delivered: return job.state == .delivered && job.deliveredAt != nil
            case .discarded: return job.state == .discarded && job.reason == "discarded by an operator"
            case .deadLettered: return job.state == .deadLettered && job.incident == 8 && job.reason != nil
            case .requeued: return requeued
            }
        }
    }
}
