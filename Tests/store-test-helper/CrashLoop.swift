import ErrorBusStore
import Logging

/// Changes jobs as fast as it can, in four concurrent workers, and prints each change once the
/// store has committed it:
///
/// - `Q id`: enqueued (`queued`);
/// - `F id`: `inFlight`;
/// - then one of `D id` (delivered, through the batched `markDelivered`), `P id` (parked under
///   incident 7), `X id` (dead-lettered), `R id` (queued again, `attempts` 1), or nothing (the
///   job stays in flight).
///
/// The crash test kills it with SIGKILL and checks that every printed change is in the database.
struct CrashLoop {
    var directory: String
    var prefix: String

    @concurrent
    func run() async throws {
        var logger = Logger(label: "store-test-helper")
        logger.logLevel = .warning
        let store = try JobStore(directory: directory, logger: logger)
        // What the daemon does at start: the previous round's jobs in flight or parked.
        try store.requeueInterrupted()
        Output.line("ready")

        let deadline = ContinuousClock.now + .seconds(60)
        try await withThrowingDiscardingTaskGroup { group in
            for worker in 0..<4 {
                group.addTask {
                    var batch = 0
                    while ContinuousClock.now < deadline {
                        batch += 1
                        try await Self.cycle(store, prefix: "\(prefix)-\(worker)-\(batch)")
                    }
                }
            }
        }
        try await store.close()
    }

    /// One batch of jobs through their whole life.
    private static func cycle(_ store: JobStore, prefix: String) async throws {
        let new = (0..<Int.random(in: 1...32)).map { index in
            OutboxFile(
                id: "\(prefix)-\(index)",
                service: "sync",
                fileName: "\(prefix)-\(index).json",
                path: "/var/spool/errorbus/outbox/\(prefix)-\(index).json",
                size: Int64.random(in: 1...1_000_000)
            )
        }
        let ids = try await store.enqueue(new).inserted.map(\.id)
        Output.lines(ids.map { "Q \($0)" })
        try store.markInFlight(ids)
        Output.lines(ids.map { "F \($0)" })

        try await withThrowingDiscardingTaskGroup { group in
            for id in ids {
                switch Int.random(in: 0..<20) {
                case 0..<10:
                    group.addTask {
                        try await store.markDelivered(id)
                        Output.line("D \(id)")
                    }
                case 10..<13:
                    try store.markDiscarded(id, reason: "discarded by an operator")
                    Output.line("Z \(id)")
                case 13..<15:
                    try store.markDeadLettered(id, reason: "422: the payload is not valid", incident: 8)
                    Output.line("X \(id)")
                case 15..<17:
                    try store.markQueued(id, lastError: "read timeout")
                    Output.line("R \(id)")
                default:
                    break
                }
            }
        }
    }
}
