public import AsyncHTTPClient
public import ErrorBus
import ErrorBusHTTP
public import Logging
public import ServiceLifecycle

/// Uploads queued reports to the API, each as a job of its own through the bus.
///
/// A report that fails for a cause that passes (the API down, a `503` asking to wait) waits,
/// parked under the cause's incident, and goes once the bus releases it; one the API refuses for
/// good (`422`) is set aside as a dead letter.
public actor ReportUploader: Service {
    /// The service's name on the bus.
    static let service = "reports"

    /// What became of a report.
    public enum Outcome: Sendable {
        /// The API took it.
        case delivered(Receipt)
        /// It was not delivered: the API refused it for good (a dead letter), or the bus stopped.
        case notSent(JobStopped)
    }

    private let bus: ErrorBus
    private let api: ReportAPI
    private let client: HTTPClient
    private let logger: Logger
    private let queue: AsyncStream<Report>
    private let queueInput: AsyncStream<Report>.Continuation
    private let outcomeInput: AsyncStream<(Report, Outcome)>.Continuation

    /// Each report's outcome as it comes; ends when ``run()`` ends.
    public nonisolated let outcomes: AsyncStream<(Report, Outcome)>

    /// - Parameter client: a client made with `HTTPClient.Configuration.errorbusAPI()`, shared
    ///   with the bus's probe.
    public init(bus: ErrorBus, api: ReportAPI, client: HTTPClient, logger: Logger) {
        self.bus = bus
        self.api = api
        self.client = client
        self.logger = logger
        (queue, queueInput) = AsyncStream.makeStream()
        (outcomes, outcomeInput) = AsyncStream.makeStream()
    }

    /// Queues a report; ``run()`` sends it.
    public nonisolated func enqueue(_ report: Report) {
        queueInput.yield(report)
    }

    /// Sends queued reports, side by side, until the group shuts down; returns once the reports
    /// under way have their outcome (the bus, stopping first, ends those it still holds).
    public func run() async {
        await withDiscardingTaskGroup { group in
            for await report in queue.cancelOnGracefulShutdown() {
                group.addTask {
                    let outcome = await self.send(report)
                    self.outcomeInput.yield((report, outcome))
                }
            }
        }
        outcomeInput.finish()
    }

    // sample: http-perform
    /// Sends one report through the bus and waits for its final outcome, however long an
    /// incident holds it: the bus reads the `HTTPFailure` it throws to decide.
    func send(_ report: Report) async -> Outcome {
        let job = Job(id: report.id, service: Self.service, scope: api.origin)
        do throws(JobStopped) {
            let receipt = try await bus.perform(job) { [api, client] () async throws(HTTPFailure) -> Receipt in
                try await api.upload(report, with: client)
            }
            logger.info("\(report.id) delivered")
            return .delivered(receipt)
        } catch {
            // A dead letter (`invalid`: a 4xx, an answer that is not a receipt), or the bus stopped.
            logger.warning("\(report.id) not sent: \(error)")
            return .notSent(error)
        }
    }
    // end sample
}
