import ErrorBus
import ErrorBusStore
import ErrorBusUnits
import Foundation
import Synchronization

/// `sync.max-age`, shared by every job's run closure.
final class AgeLimit: Sendable {
    private let value: Mutex<Duration?>

    init(_ limit: Duration?) {
        value = Mutex(limit)
    }

    var limit: Duration? {
        get { value.withLock { $0 } }
        set { value.withLock { $0 = newValue } }
    }
}

/// What a job brought with it from the store, and how many times the bus has run it since.
final class JobHistory: Sendable {
    /// When it was queued: its arrival.
    let queuedAt: Date
    /// Attempts the store recorded before this submission.
    let attempts: Int
    /// Runs since (each call of the bus's run closure).
    let runs = Atomic<Int>(0)

    init(queuedAt: Date, attempts: Int) {
        self.queuedAt = queuedAt
        self.attempts = attempts
    }
}

/// A job queued longer ago than `sync.max-age`: set aside as a dead letter instead of uploaded.
struct JobTooOld: CategorizedError {
    static let cause = "tooOld"
    let job: OutboxFile
    let age: Duration
    let limit: Duration

    var category: ErrorCategory { .invalid(reason: "older than sync.max-age") }
    var cause: String { Self.cause }
    var operatorText: OperatorText {
        OperatorText(
            title: "Older than \(DurationText.exact(limit))",
            message: "\(job.fileName) was queued \(DurationText.format(age)) ago, longer than sync.max-age (\(DurationText.exact(limit))) allows: it is set aside instead of uploaded, as the API would reject data this old.",
            next: "Retry it after raising sync.max-age if the API takes it after all; otherwise discard it."
        )
    }
}
