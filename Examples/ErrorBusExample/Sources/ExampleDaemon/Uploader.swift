import ErrorBus
import Logging
import ServiceLifecycle

/// Sends queued reports to the API, each as a job of its own through the bus.
///
/// The queue hands reports to the bus with `submit`: a report the bus parks in an outage holds
/// no task while it waits, and its completion says what became of it. ``sendNow(_:)`` is the
/// path for a caller that must answer quickly.
actor Uploader: Service {
    /// The service's name on the bus.
    static let service = "uploader"

    /// What became of a report.
    enum Outcome: Sendable, Hashable {
        case delivered
        /// The API refused it for good: set aside, not retried.
        case deadLettered(reason: String)
        /// Not sent: the bus stopped, or the report was cancelled. A daemon with a durable queue
        /// sends it at its next start.
        case notSent(JobStopped.Reason)
    }

    private let bus: ErrorBus
    private let api: SimulatedAPI
    private let credentials: Credentials
    private let logger: Logger
    private let queue: AsyncStream<Report>
    private let queueInput: AsyncStream<Report>.Continuation
    private let outcomeInput: AsyncStream<(Report, Outcome)>.Continuation

    /// Each report's outcome, as it comes (the latest 1,000 for a reader that falls behind).
    nonisolated let outcomes: AsyncStream<(Report, Outcome)>
    /// The ids of the reports the API took, in the order it took them.
    private(set) var delivered: [String] = []
    /// The reports the API refused for good, with why.
    private(set) var deadLetters: [String: String] = [:]

    init(bus: ErrorBus, api: SimulatedAPI, credentials: Credentials, logger: Logger) {
        self.bus = bus
        self.api = api
        self.credentials = credentials
        self.logger = logger
        (queue, queueInput) = AsyncStream.makeStream()
        (outcomes, outcomeInput) = AsyncStream.makeStream(bufferingPolicy: .bufferingNewest(1_000))
    }

    /// Queues a report; ``run()`` sends it.
    nonisolated func enqueue(_ report: Report) {
        queueInput.yield(report)
    }

    /// Sends queued reports until the group shuts down.
    ///
    /// One first run at a time keeps the example short; every report the bus parks frees the
    /// queue for the next.
    func run() async {
        for await report in queue.cancelOnGracefulShutdown() {
            await send(report)
        }
        logger.info("uploader stopped: \(delivered.count) reports delivered")
    }

    // sample: uploader-submit
    /// Hands one report to the bus: it runs now, unless an incident holds the API back, and parks
    /// when it fails with a cause that passes (the API down, the token expired).
    private func send(_ report: Report) async {
        let job = Job(id: report.id, service: Self.service, scope: api.host, realm: "api")
        let submission = await bus.submit(job) { [api, credentials] in
            try await Self.upload(report, to: api, with: credentials)
        } completion: { outcome in
            // Called once, later, for a job the bus parked.
            await self.finished(report, outcome)
        }
        switch submission {
        case .completed: finished(report, .succeeded)
        case .stopped(let stopped): finished(report, .stopped(stopped))
        case .parked(let incident): logger.debug("\(report.id) parked under incident \(incident.map { "\($0)" } ?? "none")")
        }
    }

    /// The operation the bus runs, and runs again once it releases the job: one `PUT`, its
    /// failure in the uploader's terms.
    static func upload(_ report: Report, to api: SimulatedAPI, with credentials: Credentials) async throws(UploadError) {
        do throws(APIFailure) {
            try await api.upload(report, token: credentials.token)
        } catch {
            throw UploadError(error, sending: report, to: api.host)
        }
    }
    // end sample

    private func finished(_ report: Report, _ outcome: JobOutcome) {
        let result: Outcome
        switch outcome {
        case .succeeded:
            delivered.append(report.id)
            result = .delivered
        case .stopped(let stopped) where stopped.reason == .deadLettered:
            let reason = stopped.failure?.text.message ?? "\(stopped)"
            deadLetters[report.id] = reason
            result = .deadLettered(reason: reason)
        case .stopped(let stopped):
            result = .notSent(stopped.reason)
        }
        outcomeInput.yield((report, result))
    }

    /// What ``sendNow(_:)`` answers.
    enum SendNowResult: Sendable, Hashable, CustomStringConvertible {
        case delivered
        /// An incident holds the API back (or this attempt just opened one): the report is
        /// queued and goes once the incident is over.
        case queued(behind: IncidentID?)
        /// The API refused the report, or the bus stopped.
        case notSent(JobStopped.Reason)

        var description: String {
            switch self {
            case .delivered: "delivered"
            case .queued(let incident?): "queued behind incident \(incident)"
            case .queued(nil): "queued"
            case .notSent(let reason): "not sent (\(reason))"
            }
        }
    }

    // sample: send-now
    /// Sends one report now, for a caller that must answer at once (a request handler, say).
    ///
    /// While an incident holds the API, the bus does not run the job and answers `.held` at
    /// once; a failure that would park it ends it the same way. The report then joins the queue,
    /// which parks it until the incident is over.
    func sendNow(_ report: Report) async -> SendNowResult {
        let job = Job(id: report.id, service: Self.service, scope: api.host, realm: "api", whenHeld: .failFast)
        do throws(JobStopped) {
            try await bus.perform(job) { [api, credentials] in
                try await Self.upload(report, to: api, with: credentials)
            }
            finished(report, .succeeded)
            return .delivered
        } catch let stopped where stopped.reason == .held {
            enqueue(report)
            return .queued(behind: stopped.incident)
        } catch {
            finished(report, .stopped(error))
            return .notSent(error.reason)
        }
    }
    // end sample
}
