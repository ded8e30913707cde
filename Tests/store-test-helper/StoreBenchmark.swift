import ErrorBusStore
import Foundation
import Logging

/// Measures the job store on real files and prints one line per figure, for both durability
/// settings: enqueue in batches of 1,000, `claimQueued` with 100,000 jobs queued, the database's
/// size per 100,000 jobs, single-row transactions, and `markDelivered` one transaction per call
/// and batched; then the limits on 100,000 dead letters.
///
/// Run in a release build: `scripts/bench-store`.
struct StoreBenchmark {
    var directory: String

    private static let jobs = 100_000
    private let clock = ContinuousClock()

    @concurrent
    func run() async throws {
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        Output.line("store-test-helper bench: \(Self.jobs) jobs, directory \(directory)")
        for durability in [StoreDurability.processCrash, .powerLoss] {
            try await measure(durability)
        }
    }

    private func measure(_ durability: StoreDurability) async throws {
        let directory = self.directory + "/" + (durability == .processCrash ? "process-crash" : "power-loss")
        try? FileManager.default.removeItem(atPath: directory)
        var logger = Logger(label: "store-test-helper")
        logger.logLevel = .warning
        Output.line("")
        Output.line("durability \(durability)")

        let store = try JobStore(directory: directory, durability: durability, logger: logger)

        // Enqueue: 100 transactions of 1,000 new jobs.
        let ids = (0..<Self.jobs).map { String(format: "%064x", $0 &* 2_654_435_761) }
        var batchTimes: [Duration] = []
        for start in stride(from: 0, to: Self.jobs, by: 1_000) {
            let batch = ids[start..<start + 1_000].map { id in
                OutboxFile(
                    id: id,
                    service: "sync",
                    fileName: "item-\(id.suffix(12)).json",
                    path: "/var/spool/errorbusd/outbox/item-\(id.suffix(12)).json",
                    size: 4_096
                )
            }
            batchTimes.append(try await clock.measure { _ = try await store.enqueue(batch) })
        }
        report("enqueue, batches of 1,000", count: Self.jobs, times: batchTimes, per: 1_000)

        // claimQueued as the sync service calls it (4 × concurrency 16), 100 times, with
        // 100,000 queued: the oldest 6,400 end in flight.
        let (claimCount, claimLimit) = (100, 64)
        var claims: [Duration] = []
        for _ in 0..<claimCount {
            claims.append(try await clock.measure { _ = try await store.claimQueued(limit: claimLimit) })
        }
        Output.line("claimQueued(limit: \(claimLimit)), \(Self.jobs) queued: p50 \(micro(median(claims))) µs, p99 \(micro(percentile(claims, 0.99))) µs")
        let counts = try clock.measure { _ = try store.counts() }
        Output.line("counts() with \(Self.jobs) jobs: \(micro(counts)) µs")

        // Size: close (which checkpoints and truncates the WAL) and look at the file.
        try await store.close()
        Output.line("database size, \(Self.jobs) jobs, \(claimCount * claimLimit) of them in flight: \(size(directory)) bytes (\(size(directory) / Self.jobs) bytes/job)")
        let reopened = try JobStore(directory: directory, durability: durability, logger: logger)

        // One transaction per call, on jobs still queued.
        let single = Array(ids[(Self.jobs - 5_000)...])
        let inFlight = try clock.measure { for id in single { try reopened.markInFlight(id) } }
        report("markInFlight(id), one transaction each", count: single.count, total: inFlight)
        let perCall = try clock.measure { for id in single { try reopened.markDelivered([id]) } }
        report("markDelivered([id]), one transaction each", count: single.count, total: perCall)

        // Batched, one caller awaiting each completion in turn: a lone completion's latency.
        let sequential = Array(ids[5_000..<10_000])
        let sequentialTime = try await clock.measure { for id in sequential { try await reopened.markDelivered(id) } }
        report("markDelivered(id) batched, 1 caller in turn", count: sequential.count, total: sequentialTime)

        // Batched, 64 concurrent callers (uploads completing together).
        let concurrent = Array(ids[10_000..<60_000])
        let before = reopened.deliveryStatistics
        let concurrentTime = try await clock.measure {
            try await withThrowingDiscardingTaskGroup { group in
                for lane in 0..<64 {
                    group.addTask {
                        for index in stride(from: lane, to: concurrent.count, by: 64) {
                            try await reopened.markDelivered(concurrent[index])
                        }
                    }
                }
            }
        }
        let after = reopened.deliveryStatistics
        let transactions = after.transactions - before.transactions
        report(
            "markDelivered(id) batched, 64 concurrent callers",
            count: concurrent.count,
            total: concurrentTime,
            note: "\(transactions) transactions, \(concurrent.count / max(1, transactions)) completions each on average, largest \(after.largestBatch)"
        )
        try await reopened.close()
        Output.line("database size, \(Self.jobs) jobs of which 60,000 delivered: \(size(directory)) bytes")
        try await deadLetters(durability, logger: logger)
    }

    /// The limits at 100,000 dead letters: the table full as `sync.dead-letters.max-count`
    /// allows ten times over, what a retention pass and the backlog cost there.
    private func deadLetters(_ durability: StoreDurability, logger: Logger) async throws {
        let directory = self.directory + "/dead-letters-" + (durability == .processCrash ? "process-crash" : "power-loss")
        try? FileManager.default.removeItem(atPath: directory)
        let store = try JobStore(directory: directory, durability: durability, logger: logger)
        for start in stride(from: 0, to: Self.jobs, by: 1_000) {
            _ = try await store.enqueue((start..<start + 1_000).map { index in
                OutboxFile(id: String(format: "%064x", index), service: "sync", fileName: "dead-\(index).json", path: "/o/dead-\(index).json", size: 4_096)
            })
        }
        // drop-oldest with room for nothing: every queued job a dead letter, one transaction.
        var dropped = 0
        let drop = try clock.measure {
            dropped = try store.dropOldestQueued(maxBytes: nil, maxJobs: 0, reason: "dropped to make room for newer files").count
        }
        Output.line("dropOldestQueued, \(dropped) queued jobs set aside in one transaction: \(milli(drop)) ms")
        let ninetyDaysAgo = Date().addingTimeInterval(-90 * 86_400)
        let idle = try clock.measure { _ = try store.pruneDeadLetters(keeping: Self.jobs, before: ninetyDaysAgo) }
        Output.line("pruneDeadLetters, \(Self.jobs) dead letters, none beyond the limits (a periodic pass): \(micro(idle)) µs")
        let backlog = try clock.measure { _ = try store.backlog() }
        Output.line("backlog(), \(Self.jobs) dead letters and no job waiting: \(micro(backlog)) µs")
        let one = try clock.measure { _ = try store.pruneDeadLetters(keeping: Self.jobs - 1, before: ninetyDaysAgo) }
        Output.line("pruneDeadLetters, one beyond max-count (a full table, a new dead letter): \(micro(one)) µs")
        var pruned = 0
        let many = try clock.measure { pruned = try store.pruneDeadLetters(keeping: 10_000, before: ninetyDaysAgo).all.count }
        Output.line("pruneDeadLetters, \(pruned) beyond max-count 10,000 at once (a lowered limit): \(milli(many)) ms")
        // sync.finished-retention's hourly pass over the finished jobs: the dead letters given up.
        let keep = try clock.measure { _ = try store.pruneFinished(before: Date().addingTimeInterval(-30 * 86_400)) }
        Output.line("pruneFinished, \(pruned) finished jobs, none old enough (the hourly pass): \(milli(keep)) ms")
        var forgotten = 0
        let forget = try clock.measure { forgotten = try store.pruneFinished(before: Date().addingTimeInterval(60)) }
        Output.line("pruneFinished, \(forgotten) finished jobs forgotten, 10,000 a transaction: \(milli(forget)) ms")
        try await store.close()
        try? FileManager.default.removeItem(atPath: directory)
    }

    // MARK: Figures

    private func report(_ name: String, count: Int, times: [Duration], per: Int) {
        let total = times.reduce(Duration.zero, +)
        Output.line(
            "\(name): \(rate(count, total)) jobs/s; one batch p50 \(milli(median(times))) ms, p99 \(milli(percentile(times, 0.99))) ms"
        )
    }

    private func report(_ name: String, count: Int, total: Duration, note: String? = nil) {
        Output.line("\(name): \(rate(count, total)) calls/s (\(micro(total / count)) µs each)\(note.map { "; \($0)" } ?? "")")
    }

    private func rate(_ count: Int, _ total: Duration) -> String {
        let seconds = Double(total.components.seconds) + Double(total.components.attoseconds) / 1e18
        return String(Int((Double(count) / seconds).rounded()))
    }

    private func median(_ times: [Duration]) -> Duration { percentile(times, 0.5) }

    private func percentile(_ times: [Duration], _ fraction: Double) -> Duration {
        let sorted = times.sorted()
        return sorted[min(sorted.count - 1, Int(Double(sorted.count) * fraction))]
    }

    private func micro(_ duration: Duration) -> String {
        String(format: "%.1f", Double(duration.components.attoseconds) / 1e12 + Double(duration.components.seconds) * 1e6)
    }

    private func milli(_ duration: Duration) -> String {
        String(format: "%.2f", Double(duration.components.attoseconds) / 1e15 + Double(duration.components.seconds) * 1e3)
    }

    private func size(_ directory: String) -> Int {
        let attributes = try? FileManager.default.attributesOfItem(atPath: directory + "/" + JobStore.databaseFileName)
        return (attributes?[.size] as? Int) ?? -1
    }
}
