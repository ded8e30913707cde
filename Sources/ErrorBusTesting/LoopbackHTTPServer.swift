#if HTTP
import NIOCore
import NIOHTTP1
import NIOPosix
import Synchronization

/// A real HTTP/1.1 server on 127.0.0.1 for tests: real connections and real HTTP over the loopback
/// interface, answering each request as the test scripts it (a status, headers, a body, a delay,
/// a connection closed without an answer or in the middle of the body).
///
/// Code under test makes its requests with its own `HTTPClient`, exactly as in production, so
/// the failures it meets are the client's own: a refused connection once the server is gone, a
/// reset, a read timeout, a body cut short.
///
/// ```swift
/// let answer: @Sendable (LoopbackHTTPServer.Request) async -> LoopbackHTTPServer.Response = { request in
///     request.path == "/healthz" ? .init(status: 204) : .init(status: 503, headers: [("Retry-After", "7")])
/// }
/// try await LoopbackHTTPServer.serving(answer: answer) { server in
///     // requests to server.baseURL, e.g. "http://127.0.0.1:41234"
/// }
/// ```
///
/// Only with the package trait `HTTP`, which brings SwiftNIO.
public struct LoopbackHTTPServer: Sendable {
    /// The port it listens on.
    public let port: Int
    private let log: RequestLog

    /// `http://127.0.0.1:PORT`, to which the request's path is appended.
    public var baseURL: String { "http://127.0.0.1:\(port)" }

    /// Every request it read so far, in the order it read them.
    public var received: [Request] { log.received }

    /// Every request as it is read, before it is answered; ends once the server stopped. Wait
    /// on it for "the request reached the server" instead of sleeping.
    public var requests: AsyncStream<Request> { log.stream }

    /// Listens on 127.0.0.1, `port` (0: one the system picks, which tests that run side by side
    /// should prefer: a port another server gave back a moment ago may be held by the kernel a
    /// while longer), while `body` runs; then closes the listening socket
    /// and every connection, answered or not, and returns what `body` returned.
    ///
    /// However `body` ends (it returns, throws, or its task is cancelled), no connection is left
    /// behind, so a test may start and stop as many servers as it likes, one after the other
    /// on the same port or side by side.
    ///
    /// - Parameters:
    ///   - port: the port, or 0.
    ///   - answer: called for each request once its body has been read; what it returns is sent.
    ///     Requests of different connections are answered side by side, those of one
    ///     connection in turn.
    ///   - body: the test, given the server (its ``baseURL``, the requests it read).
    /// - Throws: what `body` throws, or the error binding the port (`EADDRINUSE`).
    public static func serving<Value>(
        port: Int = 0,
        isolation: isolated (any Actor)? = #isolation,
        answer: @escaping @Sendable (Request) async -> Response,
        _ body: (LoopbackHTTPServer) async throws -> Value
    ) async throws -> Value {
        let pending = PendingConnections()
        let log = RequestLog()
        let listener = try await bind(port: port, pending: pending)
        let server = LoopbackHTTPServer(port: listener.channel.localAddress?.port ?? port, log: log)
        let result = await withDiscardingTaskGroup(returning: Result<Value, any Error>.self) { group in
            group.addTask {
                try? await listener.executeThenClose { connections in
                    // Discarding: a finished connection's task is gone at once.
                    await withDiscardingTaskGroup { connectionTasks in
                        do {
                            for try await connection in connections {
                                guard let connection else { continue }
                                pending.take(connection)
                                connectionTasks.addTask { await serve(connection, answer: answer, log: log) }
                            }
                        } catch {
                            // The listening socket closed, or the task was cancelled.
                        }
                    }
                }
            }
            let result: Result<Value, any Error>
            do {
                result = .success(try await body(server))
            } catch {
                result = .failure(error)
            }
            // Accept nothing more, and end the connections under way (a delayed answer too).
            // Connections accepted but not yet handed to the loop, which the cancelled loop
            // drops, are still registered: closed below.
            listener.channel.close(promise: nil)
            group.cancelAll()
            return result
        }
        // The listening socket is closed, not only asked to close, before the port is given
        // back: a server started next on it must not meet it (EADDRINUSE).
        try? await listener.channel.closeFuture.get()
        await pending.closeRemaining()
        log.finish()
        return try result.get()
    }

    /// Binds the listening socket. A port given back by a server that just stopped may still
    /// be held for a moment by the kernel (its last connections closing), which no event tells:
    /// `EADDRINUSE` is tried again for up to a second before it is thrown.
    private static func bind(
        port: Int,
        pending: PendingConnections
    ) async throws -> NIOAsyncChannel<Connection?, Never> {
        let deadline = ContinuousClock.now + .seconds(1)
        while true {
            do {
                return try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
                    .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
                    .bind(host: "127.0.0.1", port: port) { channel in
                        channel.eventLoop.makeCompletedFuture {
                            try channel.pipeline.syncOperations.configureHTTPServerPipeline()
                            return try pending.register(channel)
                        }
                    }
            } catch let error as IOError where error.errnoCode == EADDRINUSE && port != 0 && ContinuousClock.now < deadline {
                try await Task.sleep(for: .milliseconds(10))
            }
        }
    }

    /// Answers the requests of one connection until the client closes it, an answer closes it,
    /// or the server stops. Never throws: one broken connection does not stop the server.
    private static func serve(
        _ connection: Connection,
        answer: @Sendable (Request) async -> Response,
        log: RequestLog
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
                    head = nil
                    let request = Request(
                        method: requestHead.method.rawValue,
                        target: requestHead.uri,
                        headers: requestHead.headers.map { ($0.name, $0.value) },
                        body: Array(body.readableBytesView)
                    )
                    log.record(request)
                    let response = await answer(request)
                    if response.delay > .zero {
                        try await Task.sleep(for: response.delay)
                    }
                    guard try await send(response, to: outbound) else { return }
                }
            }
        }
    }

    /// Writes `response`; false once it closed the connection (ending it).
    private static func send(_ response: Response, to outbound: NIOAsyncChannelOutboundWriter<HTTPServerResponsePart>) async throws -> Bool {
        let cutAfter: Int?
        switch response.ending.kind {
        case .complete: cutAfter = nil
        case .withoutAnswer: return false
        case .cutShort(let bytes): cutAfter = max(0, min(bytes, response.body.count - 1))
        }
        let status = HTTPResponseStatus(statusCode: response.status)
        var headers = HTTPHeaders(response.headers)
        // A 1xx, 204 or 304 has no body and must not announce one (RFC 9110 §8.6); the others
        // announce the whole body unless the test announces something else itself.
        let bodiless = response.status < 200 || response.status == 204 || response.status == 304
        if !bodiless, !headers.contains(name: "Content-Length"), !headers.contains(name: "Transfer-Encoding") {
            headers.add(name: "Content-Length", value: "\(response.body.count)")
        }
        try await outbound.write(.head(HTTPResponseHead(version: .http1_1, status: status, headers: headers)))
        let sent = cutAfter.map { Array(response.body.prefix($0)) } ?? response.body
        if !bodiless, !sent.isEmpty {
            try await outbound.write(.body(.byteBuffer(ByteBuffer(bytes: sent))))
        }
        if cutAfter != nil { return false }
        try await outbound.write(.end(nil))
        return true
    }
}

extension LoopbackHTTPServer {
    /// A request as the server read it.
    public struct Request: Sendable {
        /// `GET`, `PUT`, …
        public var method: String
        /// The request target as sent: the path and the query, e.g. `/v1/items/1?fields=id`.
        public var target: String
        /// The header fields in the order sent.
        public var headers: [(name: String, value: String)]
        /// The body, whole.
        public var body: [UInt8]

        public init(method: String, target: String, headers: [(name: String, value: String)] = [], body: [UInt8] = []) {
            self.method = method
            self.target = target
            self.headers = headers
            self.body = body
        }

        /// The target without its query.
        public var path: String { String(target.prefix { $0 != "?" }) }

        /// The body as UTF-8 text.
        public var text: String { String(decoding: body, as: UTF8.self) }

        /// The value of the first header field named `name` (in any case).
        public func header(_ name: String) -> String? {
            headers.first { $0.name.lowercased() == name.lowercased() }?.value
        }
    }

    /// What the server answers a request with, and how.
    public struct Response: Sendable {
        /// The status code, e.g. `201`.
        public var status: Int
        /// The header fields. `Content-Length` is added (the body's length) unless given here, or
        /// `Transfer-Encoding` is, or the status has no body (1xx, `204`, `304`): give it to
        /// announce a length the body does not have.
        public var headers: [(name: String, value: String)]
        /// The body.
        public var body: [UInt8]
        /// How long the server waits, in real time, before it sends anything: longer than the
        /// client's read timeout or deadline makes the client give up.
        public var delay: Duration
        /// Whether the answer is sent whole, or the connection closes before or during it.
        public var ending: Ending

        public init(
            status: Int,
            headers: [(name: String, value: String)] = [],
            body: String = "",
            delay: Duration = .zero,
            ending: Ending = .complete
        ) {
            self.init(status: status, headers: headers, bytes: Array(body.utf8), delay: delay, ending: ending)
        }

        public init(
            status: Int,
            headers: [(name: String, value: String)] = [],
            bytes: [UInt8],
            delay: Duration = .zero,
            ending: Ending = .complete
        ) {
            self.status = status
            self.headers = headers
            self.body = bytes
            self.delay = delay
            self.ending = ending
        }

        /// No answer: the connection closes once the request is read (after `delay`), which the
        /// client sees as the server closing the connection under its request.
        public static func noAnswer(after delay: Duration = .zero) -> Response {
            Response(status: 0, delay: delay, ending: .withoutAnswer)
        }
    }

    /// How an answer ends.
    public struct Ending: Sendable, Hashable {
        enum Kind: Hashable {
            case complete
            case withoutAnswer
            case cutShort(afterBodyBytes: Int)
        }

        let kind: Kind

        /// The whole answer; the connection stays open for the client's next request.
        public static let complete = Ending(kind: .complete)
        /// Nothing is sent: the connection closes once the request is read.
        public static let withoutAnswer = Ending(kind: .withoutAnswer)
        /// The head and the first `bytes` of the body (fewer than the body has) are sent, then the
        /// connection closes: a body cut short.
        public static func cutShort(afterBodyBytes bytes: Int) -> Ending {
            Ending(kind: .cutShort(afterBodyBytes: bytes))
        }
    }
}

extension LoopbackHTTPServer {
    typealias Connection = NIOAsyncChannel<HTTPServerRequestPart, HTTPServerResponsePart>

    /// The requests read, kept and streamed.
    final class RequestLog: Sendable {
        private let requests = Mutex<[Request]>([])
        let stream: AsyncStream<Request>
        private let continuation: AsyncStream<Request>.Continuation

        init() {
            (stream, continuation) = AsyncStream.makeStream()
        }

        var received: [Request] { requests.withLock { $0 } }

        func record(_ request: Request) {
            requests.withLock { $0.append(request) }
            continuation.yield(request)
        }

        func finish() {
            continuation.finish()
        }
    }

    /// The connections set up but not yet handed to a task.
    ///
    /// A connection's `NIOAsyncChannel` must be closed through `executeThenClose`: dropping one
    /// whose channel is open traps in NIO ("Deinited NIOAsyncWriter without calling finish()").
    /// The accept loop ends (the server stops, the test is cancelled) with connections still on
    /// their way to it, buffered in the listening channel's stream or being set up; the server
    /// closes those through this registry when it stops, and it sets up none after that.
    final class PendingConnections: Sendable {
        private struct State {
            var closed = false
            var connections: [ObjectIdentifier: Connection] = [:]
        }

        private let state = Mutex(State())

        /// Wraps `channel` and registers it; `nil` (and the channel closed) once the server stopped.
        /// On the channel's event loop.
        func register(_ channel: any Channel) throws -> Connection? {
            let wrapped = try state.withLock { state -> Connection? in
                guard !state.closed else { return nil }
                let wrapped = try Connection(wrappingChannelSynchronously: channel)
                state.connections[ObjectIdentifier(channel)] = wrapped
                return wrapped
            }
            if wrapped == nil { channel.close(promise: nil) }
            return wrapped
        }

        /// Takes a connection the accept loop is about to serve.
        func take(_ connection: Connection) {
            _ = state.withLock { $0.connections.removeValue(forKey: ObjectIdentifier(connection.channel)) }
        }

        /// Closes every connection not taken, and refuses new ones.
        func closeRemaining() async {
            let remaining = state.withLock { state in
                state.closed = true
                defer { state.connections = [:] }
                return Array(state.connections.values)
            }
            for connection in remaining {
                try? await connection.executeThenClose { _, _ in }
            }
        }
    }
}
#endif
