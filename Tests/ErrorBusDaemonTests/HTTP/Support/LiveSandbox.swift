import AsyncHTTPClient
import ErrorBusDaemon
import ErrorBusHTTP
import Foundation
import InMemoryLogging
import Logging
import NIOCore
import NIOHTTP1
import Sandbox
import ServiceLifecycle
import Testing

/// The errorbus sandbox served in-process on an ephemeral loopback port, with an HTTP client
/// configured the way errorbusd configures its own (``HTTPClient/Configuration/errorbusAPI(connectTimeout:readTimeout:)``),
/// and requests sent the way a service sends them: execute, classify an unexpected status, read
/// a bounded body, decode.
struct LiveSandbox: Sendable {
    let port: Int
    let client: HTTPClient

    var baseURL: String { "http://127.0.0.1:\(port)" }
    /// The scope its answers are grouped by on the bus.
    var origin: String { baseURL }

    /// Sends a request and returns the ``HTTPFailure`` a service would throw for its outcome, or
    /// `nil` when it succeeded.
    ///
    /// - Parameters:
    ///   - expecting: the statuses that mean success.
    ///   - decodingJSON: whether a successful body must be JSON.
    ///   - bodyLimit: the most bytes of a successful body read.
    ///   - timeout: the request's deadline, for the head and the body.
    func failure(
        _ method: HTTPMethod,
        _ path: String,
        headers: [(String, String)] = [],
        body: ByteBuffer? = nil,
        expecting: Set<Int> = [200],
        decodingJSON: Bool = true,
        bodyLimit: Int = HTTPFailure.errorBodyLimit,
        timeout: Duration = .seconds(10)
    ) async -> HTTPFailure? {
        await Self.failure(
            of: method, url: baseURL + path, client: client, headers: headers, body: body,
            expecting: expecting, decodingJSON: decodingJSON, bodyLimit: bodyLimit, timeout: timeout
        )
    }

    /// ``failure(_:_:headers:body:expecting:decodingJSON:bodyLimit:timeout:)`` for any URL and client.
    static func failure(
        of method: HTTPMethod,
        url: String,
        client: HTTPClient,
        headers: [(String, String)] = [],
        body: ByteBuffer? = nil,
        expecting: Set<Int> = [200],
        decodingJSON: Bool = true,
        bodyLimit: Int = HTTPFailure.errorBodyLimit,
        timeout: Duration = .seconds(10)
    ) async -> HTTPFailure? {
        var request = HTTPClientRequest(url: url)
        request.method = method
        for (name, value) in headers { request.headers.add(name: name, value: value) }
        if let body { request.body = .bytes(body) }
        let deadline = NIODeadline.now() + .nanoseconds(Int64(timeout / .nanoseconds(1)))
        do {
            let response = try await client.execute(request, deadline: deadline)
            let status = Int(response.status.code)
            guard expecting.contains(status) else {
                return await HTTPFailure.classifying(response, method: method.rawValue, url: url, deadline: deadline)
            }
            if decodingJSON {
                _ = try await response.decodeBody(as: AnyJSON.self, upTo: bodyLimit, deadline: deadline, method: method.rawValue, url: url, expected: "JSON")
            } else {
                _ = try await response.collectBody(upTo: bodyLimit, deadline: deadline, method: method.rawValue, url: url)
            }
            return nil
        } catch {
            return HTTPFailure(classifying: error, method: method.rawValue, url: url)
        }
    }

    /// Any JSON document: the decoder parses the whole body before asking for a value.
    struct AnyJSON: Decodable {
        init(from decoder: any Decoder) throws {}
    }

    /// `POST /admin/faults` with `json`; the fault must be accepted.
    func fault(_ json: String, sourceLocation: SourceLocation = #_sourceLocation) async throws {
        var request = HTTPClientRequest(url: baseURL + "/admin/faults")
        request.method = .POST
        request.headers.add(name: "Content-Type", value: "application/json")
        request.body = .bytes(ByteBuffer(string: json))
        let response = try await client.execute(request, timeout: .seconds(10))
        let body = try await response.body.collect(upTo: 1 << 20)
        #expect((200...201).contains(response.status.code), "fault \(json): \(String(buffer: body))", sourceLocation: sourceLocation)
    }

    /// A fresh access token for the sandbox's default client credentials.
    func token() async throws -> String {
        var request = HTTPClientRequest(url: baseURL + "/oauth/token")
        request.method = .POST
        request.headers.add(name: "Content-Type", value: "application/x-www-form-urlencoded")
        request.body = .bytes(ByteBuffer(string: "grant_type=client_credentials&client_id=errorbus&client_secret=sandbox-secret"))
        let response = try await client.execute(request, timeout: .seconds(10))
        let body = try await response.body.collect(upTo: 1 << 20)
        let object = try JSONSerialization.jsonObject(with: Data(body.readableBytesView)) as? [String: Any]
        return try #require(object?["access_token"] as? String, "token: \(response.status) \(String(buffer: body))")
    }

    /// Runs `body` against a sandbox started for it, then shuts the sandbox down gracefully.
    static func with<R: Sendable>(_ body: (LiveSandbox) async throws -> R) async throws -> R {
        let logger = Logger(label: "sandbox") { _ in InMemoryLogHandler() }
        let (ports, portContinuation) = AsyncStream<Int>.makeStream()
        let server = SandboxServer(logger: logger) { port in
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
                configuration: .errorbusAPI(connectTimeout: .seconds(1), readTimeout: .seconds(10))
            )
            let result: Result<R, any Error>
            do {
                result = .success(try await body(LiveSandbox(port: port, client: client)))
            } catch {
                result = .failure(error)
            }
            try await client.shutdown()
            await group.triggerGracefulShutdown()
            try await tasks.waitForAll()
            return try result.get()
        }
    }

    /// The sandbox service ended before it reported a port.
    struct SandboxDidNotStart: Error {}
}
