import AsyncHTTPClient
import ErrorBusHTTP
import ErrorBusTesting
import NIOCore
import NIOHTTP1
import Testing

/// ErrorBusTesting's `LoopbackHTTPServer`, as AsyncHTTPClient sees it: scripted answers, the
/// requests it read, and stops that leave nothing behind however many connections are under way.
@Suite(.timeLimit(.minutes(1)))
struct LoopbackHTTPServerTests {

    @Test func anAnswerIsSentAsScriptedAndTheRequestKeptAsRead() async throws {
        let answer: @Sendable (LoopbackHTTPServer.Request) async -> LoopbackHTTPServer.Response = { request in
            .init(status: 418, headers: [("X-Answer", request.header("x-question") ?? "none")], body: "short and stout: \(request.text)")
        }
        try await LoopbackHTTPServer.serving(answer: answer) { server in
            try await withErrorbusClient { client in
                var request = HTTPClientRequest(url: server.baseURL + "/pot?size=2")
                request.method = .POST
                request.headers.add(name: "X-Question", value: "tea?")
                request.body = .bytes(ByteBuffer(string: "earl grey"))
                let response = try await client.execute(request, deadline: .now() + .seconds(30))
                #expect(response.status.code == 418)
                #expect(response.headers.first(name: "X-Answer") == "tea?")
                #expect(response.headers.first(name: "Content-Length") == "26")
                #expect(String(buffer: try await response.body.collect(upTo: 1024)) == "short and stout: earl grey")

                let read = try #require(server.received.first)
                #expect(server.received.count == 1)
                #expect(read.method == "POST")
                #expect(read.target == "/pot?size=2")
                #expect(read.path == "/pot")
                #expect(read.header("X-QUESTION") == "tea?")
                #expect(read.text == "earl grey")
            }
        }
    }

    @Test func aNoContentAnswerAnnouncesNoBody() async throws {
        try await LoopbackHTTPServer.serving(answer: { _ in .init(status: 204) }) { server in
            try await withErrorbusClient { client in
                // Twice on one connection: the first answer ended where the client expected.
                for _ in 1...2 {
                    let response = try await client.execute(HTTPClientRequest(url: server.baseURL + "/healthz"), deadline: .now() + .seconds(30))
                    #expect(response.status == .noContent)
                    #expect(response.headers.first(name: "Content-Length") == nil)
                    #expect(try await response.body.collect(upTo: 1024).readableBytes == 0)
                }
            }
        }
    }

    @Test func theRequestsStreamAsTheyAreReadAndEndWithTheServer() async throws {
        let requests = try await LoopbackHTTPServer.serving(answer: { _ in .init(status: 200) }) { server in
            try await withErrorbusClient { client in
                async let response = client.execute(HTTPClientRequest(url: server.baseURL + "/first"), deadline: .now() + .seconds(30))
                var reads = server.requests.makeAsyncIterator()
                #expect(await reads.next()?.path == "/first")
                let status = try await response.status
                #expect(status == .ok)
            }
            return server.requests
        }
        // Stopped: the stream has ended, after the request it held.
        var remaining: [String] = []
        for await request in requests { remaining.append(request.path) }
        #expect(remaining.isEmpty)
    }

    @Test func aBodyThatThrowsStopsTheServerToo() async throws {
        struct Stop: Error {}
        var port: Int?
        await #expect(throws: Stop.self) {
            try await LoopbackHTTPServer.serving(answer: { _ in .init(status: 200, delay: .seconds(30)) }) { server in
                port = server.port
                throw Stop()
            }
        }
        let stopped = try #require(port)
        try await withErrorbusClient { client in
            do throws(HTTPFailure) {
                _ = try await client.execute(HTTPClientRequest(url: "http://127.0.0.1:\(stopped)/"), accepting: [.ok], deadline: .now() + .seconds(30))
                Issue.record("a stopped server answered")
            } catch {
                // Refused; or, in a full parallel run, answered by another test's server that took
                // the freed port. The stopped one would answer 200 only after 30 s, past the
                // deadline.
                #expect(error.cause == "connectionRefused" || error.status.map { $0 != 200 } == true, "\(error)")
            }
        }
    }
}

@Suite(.timeLimit(.minutes(3)))
struct LoopbackHTTPServerStopTests {
    /// Connections still being accepted, set up, read or answered when a server stops are each
    /// closed: nothing traps, nothing waits for an answer's delay. (Each server on a port of its
    /// own: a port just given back may be held by the kernel a while longer on a loaded machine.)
    /// Twenty-five servers of four requests each. In a suite of its own, with three minutes: in a
    /// full parallel run on two loaded cores one start and stop took from 0.06 s to 7.5 s; a hundred
    /// of them, and once twenty-five, went past the minute the other tests here have.
    @Test func startedAndStoppedTimeAndAgainUnderRequests() async throws {
        // Requests not connected when a server stops are refused until the connect timeout.
        try await withErrorbusClient(connectTimeout: .milliseconds(200)) { client in
            var failed = 0
            for _ in 1...25 {
                try await withThrowingTaskGroup { requests in
                    _ = try await LoopbackHTTPServer.serving(answer: { _ in .init(status: 200, delay: .seconds(30)) }) { server in
                        for number in 1...4 {
                            requests.addTask {
                                let request = HTTPClientRequest(url: server.baseURL + "/\(number)")
                                return (try? await client.execute(request, deadline: .now() + .seconds(30))) == nil
                            }
                        }
                        // One read, the others anywhere on their way.
                        var reads = server.requests.makeAsyncIterator()
                        _ = await reads.next()
                        return server.port
                    }
                    // The server stopped under them: they fail now, not after the 30 s delay.
                    for try await didFail in requests where didFail { failed += 1 }
                }
            }
            #expect(failed == 100)
        }
    }
}
