import NIOCore
import NIOHTTP1
import NIOPosix
import Synchronization

/// An HTTP/1.1 server on 127.0.0.1 for the tests: real connections and real HTTP over the
/// loopback interface, answering each request as the test scripts it.
enum LocalAPI {
    /// A request as the server read it.
    struct Request: Sendable {
        var method: HTTPMethod
        var path: String
        var headers: HTTPHeaders
        var body: String
    }

    /// What the server answers.
    struct Answer: Sendable {
        var status: HTTPResponseStatus
        var headers: HTTPHeaders
        var body: String

        init(_ status: HTTPResponseStatus, headers: [(String, String)] = [], body: String = "") {
            self.status = status
            self.headers = HTTPHeaders(headers)
            self.body = body
        }
    }

    /// The report API of ``ReportAPI``: `GET /healthz` answers `204`; each `PUT` of a report
    /// takes the next of `answers`, and once they are used up, `201` with the report's receipt.
    static func reports(answering answers: [Answer] = []) -> @Sendable (Request) -> Answer {
        let script = Mutex(answers[...])
        return { request in
            if request.method == .GET, request.path == "/healthz" { return Answer(.noContent) }
            guard request.method == .PUT, request.path.hasPrefix("/v1/reports/") else { return Answer(.notFound) }
            if let scripted = script.withLock({ $0.popFirst() }) { return scripted }
            let id = request.path.dropFirst("/v1/reports/".count)
            return Answer(.created, headers: [("Content-Type", "application/json")], body: #"{"id":"\#(id)"}"#)
        }
    }

    /// Serves on `port` (0: one the system picks) while `body` runs with the server's base URL,
    /// e.g. `http://127.0.0.1:41234`; then closes the listening socket and every connection.
    static func serving<Value: Sendable>(
        port: Int = 0,
        answer: @escaping @Sendable (Request) -> Answer,
        _ body: (_ baseURL: String) async throws -> Value
    ) async throws -> Value {
        let server = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .bind(host: "127.0.0.1", port: port) { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.configureHTTPServerPipeline()
                    return try NIOAsyncChannel<HTTPServerRequestPart, HTTPServerResponsePart>(wrappingChannelSynchronously: channel)
                }
            }
        let baseURL = "http://127.0.0.1:\(server.channel.localAddress?.port ?? port)"
        return try await withThrowingTaskGroup { tasks in
            tasks.addTask {
                try await server.executeThenClose { connections in
                    // Discarding: a finished connection's task is gone at once.
                    await withDiscardingTaskGroup { group in
                        do {
                            for try await connection in connections {
                                group.addTask { await serve(connection, answer: answer) }
                            }
                        } catch {
                            // The listening socket closed: nothing more to accept.
                        }
                    }
                }
            }
            defer { tasks.cancelAll() }
            return try await body(baseURL)
        }
    }

    /// Answers the requests of one connection until the client closes it or the server stops.
    /// Never throws: one broken connection does not stop the server.
    private static func serve(
        _ connection: NIOAsyncChannel<HTTPServerRequestPart, HTTPServerResponsePart>,
        answer: @Sendable (Request) -> Answer
    ) async {
        try? await connection.executeThenClose { inbound, outbound in
            var head: HTTPRequestHead?
            var body = ByteBuffer()
            for try await part in inbound {
                switch part {
                case .head(let requestHead):
                    head = requestHead
                    body.clear()
                case .body(var chunk):
                    body.writeBuffer(&chunk)
                case .end:
                    guard let requestHead = head else { continue }
                    let reply = answer(Request(method: requestHead.method, path: requestHead.uri, headers: requestHead.headers, body: String(buffer: body)))
                    var headers = reply.headers
                    headers.replaceOrAdd(name: "Content-Length", value: "\(reply.body.utf8.count)")
                    try await outbound.write(.head(HTTPResponseHead(version: .http1_1, status: reply.status, headers: headers)))
                    try await outbound.write(.body(.byteBuffer(ByteBuffer(string: reply.body))))
                    try await outbound.write(.end(nil))
                }
            }
        }
    }
}
