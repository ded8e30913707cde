import AsyncHTTPClient
import ErrorBus
import ErrorBusHTTP
import ErrorBusTesting
import Logging
import NIOCore
import NIOHTTP1
@testable import ReportUploader
import Testing

/// The uploader against a real HTTP server on 127.0.0.1 (``LocalAPI``), through a bus on a
/// manual clock: the failures are AsyncHTTPClient's own, classified by `HTTPFailure`; no test
/// sleeps, every wait is for an event.
@Suite(.timeLimit(.minutes(1)))
struct ReportUploaderTests {
    let logger = Logger(label: "test", factory: { _ in SwiftLogNoOpLogHandler() })

    /// Runs `body` with a client configured as the daemon configures its own, but giving up on
    /// a refused connection after 200 ms instead of 5 s; then shuts the client down.
    func withClient<Value>(_ body: (HTTPClient) async throws -> Value) async throws -> Value {
        let client = HTTPClient(eventLoopGroupProvider: .singleton, configuration: .errorbusAPI(connectTimeout: .milliseconds(200)))
        let result: Result<Value, any Error>
        do {
            result = .success(try await body(client))
        } catch {
            result = .failure(error)
        }
        try await client.shutdown()
        return try result.get()
    }

    // sample: http-test-rate-limited
    @Test func a503WithRetryAfterWaitsExactlyAsLongAsTheAPIAsked() async throws {
        // The first upload is answered 503 with Retry-After: 7, the next one is taken.
        let answer = LocalAPI.reports(answering: [LocalAPI.Answer(.serviceUnavailable, headers: [("Retry-After", "7")])])
        try await LocalAPI.serving(answer: answer) { baseURL in
            try await withClient { client in
                var configuration = ErrorBusConfiguration.forTesting
                configuration.rateLimit.jitter = 0  // the hint exactly, not up to half again
                try await withRunningBus(configuration: configuration) { bus, clock, events in
                    let api = ReportAPI(baseURL: baseURL)
                    let uploader = ReportUploader(bus: bus, api: api, client: client, logger: logger)
                    async let outcome = uploader.send(Report(id: "report-1", text: "first reading"))

                    let opened = try #require(try await events.next(.incidentOpened).incident)
                    #expect(opened.category == .rateLimited(retryAfter: .seconds(7)))
                    #expect(opened.fingerprint.cause == "http503")
                    #expect(opened.fingerprint.scope == api.origin)
                    #expect(opened.text.title == "API unavailable for a while")
                    // Nothing goes to the API before the 7 s it asked for have passed.
                    let scheduled = try #require(try await events.next(.policyScheduled).incident?.next)
                    #expect(scheduled.delay == .seconds(7))
                    clock.advance(by: scheduled.delay)

                    guard case .delivered(let receipt) = await outcome else {
                        Issue.record("report-1 was not delivered after the wait")
                        return
                    }
                    #expect(receipt.id == "report-1")
                }
            }
        }
    }
    // end sample

    @Test func aRefusedConnectionIsUnreachableUntilTheAPIProbeFindsTheAPI() async throws {
        // A port nothing listens on once the server is gone: connections to it are refused.
        let port = try await LocalAPI.serving(answer: LocalAPI.reports()) { baseURL in
            try #require(RequestTarget(url: baseURL).port)
        }
        let api = ReportAPI(baseURL: "http://127.0.0.1:\(port)")
        try await withClient { client in
            let probe = APIProbe(configuration: api.probe, client: client, logger: logger)
            try await withRunningBus(probe: probe) { bus, clock, events in
                let uploader = ReportUploader(bus: bus, api: api, client: client, logger: logger)
                // A task, not `async let`: it is awaited inside the second server's closure.
                let sending = Task { await uploader.send(Report(id: "report-1", text: "first reading")) }

                let opened = try #require(try await events.next(.incidentOpened).incident)
                #expect(opened.category == .unreachable)
                #expect(opened.fingerprint.cause == "connectionRefused")
                #expect(opened.fingerprint.scope == "http://127.0.0.1:\(port)")
                #expect(opened.text.message.contains("Nothing accepts connections at 127.0.0.1:\(port)"))

                // The first probe finds nothing listening…
                let firstProbe = try #require(try await events.next(.policyScheduled).incident?.next)
                clock.advance(by: firstProbe.delay)
                let failed = try await events.next(.probeFailed)
                #expect(failed.reason?.contains("connection refused") == true)

                // …the next one, once the API serves on that port, finds its /healthz: the report goes.
                try await LocalAPI.serving(port: port, answer: LocalAPI.reports()) { _ in
                    let secondProbe = try #require(try await events.next(.policyScheduled).incident?.next)
                    clock.advance(by: secondProbe.delay)
                    let resolved = try #require(try await events.next(.incidentResolved).incident)
                    #expect(resolved.resolution == .recovered)
                    guard case .delivered(let receipt) = await sending.value else {
                        Issue.record("report-1 was not delivered once the API answered")
                        return
                    }
                    #expect(receipt.id == "report-1")
                }
            }
        }
    }

    @Test func a422ProblemIsADeadLetterWithTheProblemsDetail() async throws {
        let problem = """
            {"type":"https://reports.example.net/problems/empty","title":"Report rejected","status":422,\
            "detail":"A report must say something."}
            """
        let answer = LocalAPI.reports(answering: [
            LocalAPI.Answer(.unprocessableEntity, headers: [("Content-Type", "application/problem+json")], body: problem)
        ])
        try await LocalAPI.serving(answer: answer) { baseURL in
            try await withClient { client in
                try await withRunningBus { bus, _, events in
                    let uploader = ReportUploader(bus: bus, api: ReportAPI(baseURL: baseURL), client: client, logger: logger)
                    guard case .notSent(let stopped) = await uploader.send(Report(id: "report-1", text: "")) else {
                        Issue.record("a report the API refuses for good was delivered")
                        return
                    }
                    #expect(stopped.reason == .deadLettered)
                    let failure = try #require(stopped.failure?.error as? HTTPFailure)
                    #expect(failure.category == .invalid(reason: "422 Report rejected: A report must say something."))
                    #expect(failure.cause == "http422")
                    #expect(failure.problem?.type == "https://reports.example.net/problems/empty")
                    #expect(failure.problem?.detail == "A report must say something.")
                    #expect(failure.operatorText.message.hasSuffix("with 422 Report rejected: A report must say something."))
                    // Retrying cannot help: the report is a dead letter at once, nothing waits.
                    let deadLettered = try await events.next(.jobDeadLettered)
                    #expect(deadLettered.job?.id == "report-1")
                    #expect(await bus.snapshot().parkedJobs == 0)
                }
            }
        }
    }

    @Test func a409ThatARuleCallsTransientIsRetried() async throws {
        // Without the rule a 409 is `invalid`: a dead letter at once.
        let answer = LocalAPI.reports(answering: [LocalAPI.Answer(.conflict)])
        try await LocalAPI.serving(answer: answer) { baseURL in
            try await withClient { client in
                try await withRunningBus { bus, clock, events in
                    let api = try reportAPI(baseURL: baseURL, classify: ["409=transient"])
                    let uploader = ReportUploader(bus: bus, api: api, client: client, logger: logger)
                    async let outcome = uploader.send(Report(id: "report-1", text: "first reading"))

                    let opened = try #require(try await events.next(.incidentOpened).incident)
                    #expect(opened.category == .transient)
                    #expect(opened.fingerprint.cause == "override409")
                    let retry = try #require(try await events.next(.policyScheduled).incident?.next)
                    clock.advance(by: retry.delay)
                    guard case .delivered(let receipt) = await outcome else {
                        Issue.record("report-1 was not retried after the 409")
                        return
                    }
                    #expect(receipt.id == "report-1")
                }
            }
        }
    }
}
