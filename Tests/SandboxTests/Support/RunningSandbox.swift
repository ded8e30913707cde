import AsyncHTTPClient
import InMemoryLogging
import Logging
import NIOCore
import NIOHTTP1
import ServiceLifecycle
import Testing

@testable import Sandbox

import Foundation

/// A sandbox served in-process on an ephemeral loopback port, and a real HTTP client talking to it.
struct RunningSandbox: Sendable {
    /// What the client got back.
    struct Answer: Sendable {
        var status: Int
        var headers: HTTPHeaders
        var body: ByteBuffer

        var text: String { String(buffer: body) }

        func json<T: Decodable>(_ type: T.Type) throws -> T {
            try JSONDecoder().decode(type, from: Data(body.readableBytesView))
        }

        /// The body as a JSON object.
        func object() throws -> [String: Any] {
            try #require(JSONSerialization.jsonObject(with: Data(body.readableBytesView)) as? [String: Any])
        }
    }

    let port: Int
    let client: HTTPClient
    let logs: InMemoryLogHandler

    var baseURL: String { "http://127.0.0.1:\(port)" }

    /// Sends a request and reads the whole answer (up to 64 MiB).
    func send(
        _ method: HTTPMethod,
        _ path: String,
        headers: [(String, String)] = [],
        body: ByteBuffer? = nil
    ) async throws -> Answer {
        var request = HTTPClientRequest(url: baseURL + path)
        request.method = method
        for (name, value) in headers {
            request.headers.add(name: name, value: value)
        }
        if let body {
            request.body = .bytes(body)
        }
        let response = try await client.execute(request, timeout: .seconds(30))
        let bytes = try await response.body.collect(upTo: 64 * 1024 * 1024)
        return Answer(status: Int(response.status.code), headers: response.headers, body: bytes)
    }

    /// A fresh access token for the default client credentials.
    func token() async throws -> String {
        let answer = try await send(
            .POST,
            "/oauth/token",
            headers: [
                ("Authorization", "Basic " + Data("errorbus:sandbox-secret".utf8).base64EncodedString()),
                ("Content-Type", "application/x-www-form-urlencoded"),
            ],
            body: ByteBuffer(string: "grant_type=client_credentials")
        )
        try #require(answer.status == 200, "token request answered \(answer.status): \(answer.text)")
        return try #require(try answer.object()["access_token"] as? String)
    }

    /// `PUT /v1/items/{id}` with a bearer token.
    func upload(_ id: String, key: String, body: ByteBuffer, token: String) async throws -> Answer {
        try await send(.PUT, "/v1/items/\(id)", headers: [("Authorization", "Bearer \(token)"), ("Idempotency-Key", key)], body: body)
    }

    /// `POST /admin/faults` with `json`; the fault must be accepted.
    @discardableResult
    func fault(_ json: String, sourceLocation: SourceLocation = #_sourceLocation) async throws -> Answer {
        let answer = try await send(.POST, "/admin/faults", headers: [("Content-Type", "application/json")], body: ByteBuffer(string: json))
        #expect((200...201).contains(answer.status), "fault \(json) answered \(answer.status): \(answer.text)", sourceLocation: sourceLocation)
        return answer
    }

    /// `GET /admin/stats`.
    func stats() async throws -> StatsReport {
        try await send(.GET, "/admin/stats").json(StatsReport.self)
    }

    /// Runs `body` against a sandbox started for it, then shuts the sandbox down gracefully.
    static func with<R: Sendable>(
        clock: SandboxClock = .continuous,
        configuration: SandboxConfiguration = .init(),
        redirects: HTTPClient.Configuration.RedirectConfiguration = .disallow,
        _ body: (RunningSandbox) async throws -> R
    ) async throws -> R {
        let logs = InMemoryLogHandler()
        let logger = Logger(label: "sandbox-test") { _ in logs }
        let (ports, portContinuation) = AsyncStream<Int>.makeStream()
        let server = SandboxServer(configuration: configuration, clock: clock, logger: logger) { port in
            portContinuation.yield(port)
            portContinuation.finish()
        }
        let group = ServiceGroup(services: [server], logger: logger)
        return try await withThrowingTaskGroup(of: Void.self) { tasks in
            tasks.addTask {
                defer { portContinuation.finish() }
                try await group.run()
            }
            var iterator = ports.makeAsyncIterator()
            guard let port = await iterator.next() else {
                try await tasks.waitForAll()
                throw SandboxDidNotStart()
            }
            let client = HTTPClient(
                eventLoopGroupProvider: .singleton,
                configuration: .init(redirectConfiguration: redirects, timeout: .init(connect: .seconds(5), read: .seconds(30)))
            )
            let sandbox = RunningSandbox(port: port, client: client, logs: logs)
            let result: Result<R, any Error>
            do {
                result = .success(try await body(sandbox))
            } catch {
                result = .failure(error)
            }
            try await client.shutdown()
            await group.triggerGracefulShutdown()
            try await tasks.waitForAll()
            return try result.get()
        }
    }
}

/// The sandbox service ended before it reported a port.
struct SandboxDidNotStart: Error {}
