import AsyncHTTPClient
import ErrorBus
import ErrorBusHTTP
import ErrorBusTesting
import Logging
import NIOCore
@testable import ReportUploader
import Testing

/// The uploader against a real HTTP server on 127.0.0.1 (`LoopbackHTTPServer` answering as
/// ``LocalAPI`` scripts it), through a bus on a manual clock: the failures are AsyncHTTPClient's
/// own, classified by `HTTPFailure`; no test sleeps, every wait is for an event.
@Suite(.timeLimit(.minutes(1)))
struct ReportUploaderTests {
    let logger = Logger(label: "test", factory: { _ in SwiftLogNoOpLogHandler() })

    /// Runs `body` with a client configured as the daemon configures its own, but giving up on
    /// a refused connection after 200 ms instead of 5 s; then shuts the client down.
    ///
    /// On the caller's actor (`isolation`), as ErrorBusTesting's `withRunningBus` and
    /// `LoopbackHTTPServer.serving` are: without it, a test on an actor (`@MainActor`) could not
    /// hand it a closure that uses the test's state, unless the test target enabled the upcoming
    /// feature `NonisolatedNonsendingByDefault`.
    func withClient<Value>(
        isolation: isolated (any Actor)? = #isolation,
        _ body: (HTTPClient) async throws -> Value
    ) async throws -> Value {
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
        let answer = LocalAPI.reports(answering: [.init(status: 503, headers: [("Retry-After", "7")])])
        try await LoopbackHTTPServer.serving(answer: answer) { server in
            try await withClient { client in
                var configuration = ErrorBusConfiguration.forTesting
                configuration.rateLimit.jitter = 0  // the hint exactly, not up to half again
                try await withRunningBus(configuration: configuration) { bus, clock, events in
                    let api = ReportAPI(baseURL: server.baseURL)
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
        let port = try await LoopbackHTTPServer.serving(answer: LocalAPI.reports()) { server in server.port }
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
                try await LoopbackHTTPServer.serving(port: port, answer: LocalAPI.reports()) { server in
                    // The client backs off, in real time, from the connections refused so far,
                    // and fails a request that waits for a connection longer than its connect
                    // timeout with the last refusal: ask until it connects again, so that the
                    // probe is not refused by the back-off alone (seen once in twenty runs).
                    let healthz = HTTPClientRequest(url: server.baseURL + "/healthz")
                    while (try? await client.execute(healthz, deadline: .now() + .seconds(1))) == nil {}
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
            .init(status: 422, headers: [("Content-Type", "application/problem+json")], body: problem)
        ])
        try await LoopbackHTTPServer.serving(answer: answer) { server in
            try await withClient { client in
                try await withRunningBus { bus, _, events in
                    let uploader = ReportUploader(bus: bus, api: ReportAPI(baseURL: server.baseURL), client: client, logger: logger)
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
        let answer = LocalAPI.reports(answering: [.init(status: 409)])
        try await LoopbackHTTPServer.serving(answer: answer) { server in
            try await withClient { client in
                try await withRunningBus { bus, clock, events in
                    let api = try reportAPI(baseURL: server.baseURL, classify: ["409=transient"])
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

    @Test func aReceiptCutShortIsRetried() async throws {
        // The first upload's receipt stops after 4 bytes, and the connection closes.
        let answer = LocalAPI.reports(answering: [
            .init(status: 201, body: #"{"id":"report-1"}"#, ending: .cutShort(afterBodyBytes: 4))
        ])
        try await LoopbackHTTPServer.serving(answer: answer) { server in
            try await withClient { client in
                try await withRunningBus { bus, clock, events in
                    let uploader = ReportUploader(bus: bus, api: ReportAPI(baseURL: server.baseURL), client: client, logger: logger)
                    async let outcome = uploader.send(Report(id: "report-1", text: "first reading"))

                    let opened = try #require(try await events.next(.incidentOpened).incident)
                    #expect(opened.category == .transient)
                    #expect(opened.fingerprint.cause == "connectionReset")
                    let retry = try #require(try await events.next(.policyScheduled).incident?.next)
                    clock.advance(by: retry.delay)
                    guard case .delivered(let receipt) = await outcome else {
                        Issue.record("report-1 was not retried after its receipt was cut short")
                        return
                    }
                    #expect(receipt.id == "report-1")
                    #expect(server.received.map(\.method) == ["PUT", "PUT"])
                }
            }
        }
    }
}
