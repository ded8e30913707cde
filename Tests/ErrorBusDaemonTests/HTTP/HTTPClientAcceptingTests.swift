import AsyncHTTPClient
import ErrorBus
import ErrorBusHTTP
import ErrorBusTesting
import NIOCore
import NIOHTTP1
import Testing

/// `HTTPClient.execute(_:accepting:deadline:overrides:logger:)` against a real server on
/// 127.0.0.1: an accepted answer and its body, or one `HTTPFailure` classified as each step would
/// have classified it, naming the request's own method and URL.
@Suite(.timeLimit(.minutes(1)))
struct HTTPClientAcceptingTests {
    struct Receipt: Decodable { let id: String }


    /// `PUT /v1/reports/1` to the server, answered as `response`, accepting `201`, within
    /// `timeout`: far beyond a loopback answer, so that a loaded machine (a build beside the
    /// tests) meets it too; only the test of the deadline itself sets a short one.
    func put(
        _ response: LoopbackHTTPServer.Response,
        overrides: [ClassificationOverride] = [],
        timeout: TimeAmount = .seconds(30)
    ) async throws -> (Result<Receipt, HTTPFailure>, url: String) {
        try await LoopbackHTTPServer.serving(answer: { _ in response }) { server in
            try await withErrorbusClient { client in
                var request = HTTPClientRequest(url: server.baseURL + "/v1/reports/1")
                request.method = .PUT
                request.body = .bytes(ByteBuffer(string: "reading"))
                do throws(HTTPFailure) {
                    let answer = try await client.execute(request, accepting: [.created], deadline: .now() + timeout, overrides: overrides)
                    let receipt = try await answer.decodeBody(as: Receipt.self, expected: "a JSON receipt") {
                        $0.id == "1" ? nil : "a receipt for 1"
                    }
                    return (.success(receipt), request.url)
                } catch {
                    return (.failure(error), request.url)
                }
            }
        }
    }

    @Test func anAcceptedAnswerHandsOverItsBody() async throws {
        let (result, _) = try await put(.init(status: 201, headers: [("Content-Type", "application/json")], body: #"{"id":"1"}"#))
        #expect(try result.get().id == "1")
    }

    @Test func anAcceptedAnswerCarriesTheRequestForItsBody() async throws {
        try await LoopbackHTTPServer.serving(answer: { _ in .init(status: 200, body: "0123456789") }) { server in
            try await withErrorbusClient { client in
                let deadline = NIODeadline.now() + .seconds(30)
                let answer = try await client.execute(HTTPClientRequest(url: server.baseURL + "/a?b=c"), accepting: [.ok, .notModified], deadline: deadline)
                #expect(answer.status == .ok)
                #expect(answer.method == "GET")
                #expect(answer.url == server.baseURL + "/a?b=c")
                #expect(answer.deadline == deadline)
                // Bounded: more than the limit is the request's failure, named by its method and URL.
                do throws(HTTPFailure) {
                    _ = try await answer.collectBody(upTo: 4)
                    Issue.record("a 10-byte body was read with a limit of 4")
                } catch {
                    #expect(error.cause == "bodyTooLarge")
                    #expect(error.url == server.baseURL + "/a?b=c")
                    #expect(error.method == "GET")
                }
            }
        }
    }

    @Test func aStatusNotAcceptedIsClassifiedWithItsHeadersAndBody() async throws {
        let (rateLimited, url) = try await put(.init(status: 503, headers: [("Retry-After", "7")]))
        guard case .failure(let failure) = rateLimited else {
            Issue.record("a 503 was accepted")
            return
        }
        #expect(failure.category == .rateLimited(retryAfter: .seconds(7)))
        #expect(failure.cause == "http503")
        #expect(failure.method == "PUT")
        #expect(failure.url == url)
        #expect(failure.scope == RequestTarget(url: url).origin)

        let problem = #"{"title":"Report rejected","status":422,"detail":"A report must say something."}"#
        let (refused, _) = try await put(.init(status: 422, headers: [("Content-Type", "application/problem+json")], body: problem))
        guard case .failure(let failure) = refused else {
            Issue.record("a 422 was accepted")
            return
        }
        #expect(failure.category == .invalid(reason: "422 Report rejected: A report must say something."))
        #expect(failure.problem?.detail == "A report must say something.")
    }

    @Test func theRulesApplyToAnswersNotAcceptedAndA2xxIsNotAcceptedByItself() async throws {
        // A rule makes a 409 transient; a 200 is not the 201 accepted.
        let rules = [try ClassificationOverride.parse("409=transient").get()]
        let (conflict, _) = try await put(.init(status: 409), overrides: rules)
        guard case .failure(let failure) = conflict else {
            Issue.record("a 409 was accepted")
            return
        }
        #expect(failure.category == .transient)
        #expect(failure.cause == "override409")
        let (ok, _) = try await put(.init(status: 200, body: #"{"id":"1"}"#), overrides: rules)
        guard case .failure(let failure) = ok else {
            Issue.record("a 200 was accepted where only 201 is")
            return
        }
        #expect(failure.category.kind == .invalid)
        #expect(failure.cause == "http200")
    }

    @Test func aConnectionClosedWithoutAnAnswerIsTransient() async throws {
        let (result, url) = try await put(.noAnswer())
        guard case .failure(let failure) = result else {
            Issue.record("no answer was taken for one")
            return
        }
        #expect(failure.category == .transient)
        #expect(failure.cause == "connectionReset")
        #expect(failure.url == url)
    }

    @Test func aBodyCutShortOrNotAReceiptFailsTheRequest() async throws {
        let (cut, _) = try await put(.init(status: 201, body: #"{"id":"1"}"#, ending: .cutShort(afterBodyBytes: 4)))
        guard case .failure(let failure) = cut else {
            Issue.record("a body cut short was decoded")
            return
        }
        #expect(failure.category == .transient)
        #expect(failure.cause == "connectionReset")

        let (garbage, _) = try await put(.init(status: 201, body: "<html>Sign in</html>"))
        guard case .failure(let failure) = garbage else {
            Issue.record("an HTML page was taken for a receipt")
            return
        }
        #expect(failure.category.kind == .invalid)
        #expect(failure.cause == "undecodableResponse")

        let (other, _) = try await put(.init(status: 201, body: #"{"id":"2"}"#))
        guard case .failure(let failure) = other else {
            Issue.record("another report's receipt was taken")
            return
        }
        #expect(failure.cause == "undecodableResponse")
    }

    @Test func anAnswerPastTheDeadlineIsTransient() async throws {
        let (result, _) = try await put(.init(status: 201, delay: .seconds(5)), timeout: .milliseconds(200))
        guard case .failure(let failure) = result else {
            Issue.record("an answer after the deadline was taken")
            return
        }
        #expect(failure.category == .transient)
        #expect(failure.cause == "deadlineExceeded")
    }

    @Test func aRefusedConnectionIsUnreachable() async throws {
        // The port of a server that has stopped: nothing listens on it.
        let port = try await LoopbackHTTPServer.serving(answer: { _ in .init(status: 204) }) { $0.port }
        try await withErrorbusClient { client in
            let url = "http://127.0.0.1:\(port)/v1/reports/1"
            do throws(HTTPFailure) {
                _ = try await client.execute(HTTPClientRequest(url: url), accepting: [.ok], deadline: .now() + .seconds(30))
                Issue.record("a stopped server answered")
            } catch {
                #expect(error.category == .unreachable)
                #expect(error.cause == "connectionRefused")
                #expect(error.url == url)
            }
        }
    }
}
