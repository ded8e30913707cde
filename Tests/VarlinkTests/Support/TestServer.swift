import Foundation
import Logging
import NIOCore
import NIOPosix
import Varlink

/// A temporary directory for sockets, removed at the end of the test.
struct TemporaryDirectory: ~Copyable {
    let path: String

    init() throws {
        // Short, under /tmp: a Unix socket path must fit in 108 bytes.
        path = "/tmp/varlink-test-\(UUID().uuidString.prefix(8))"
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: false)
    }

    deinit {
        try? FileManager.default.removeItem(atPath: path)
    }
}

/// A logger that drops everything.
let quietLogger = Logger(label: "varlink-tests", factory: { _ in SwiftLogNoOpLogHandler() })

/// Runs a ``VarlinkServer`` on a socket in a temporary directory while `body` runs, then cancels it.
func withTestServer<Result: Sendable>(
    router: VarlinkRouter,
    logger: Logger = quietLogger,
    configure: (inout VarlinkServer.Configuration) -> Void = { _ in },
    _ body: @escaping @Sendable (_ path: String) async throws -> Result
) async throws -> Result {
    let directory = try TemporaryDirectory()
    let path = directory.path + "/test.sock"
    var configuration = VarlinkServer.Configuration(address: .unixSocket(path: path))
    configure(&configuration)
    return try await withRunningServer(router: router, configuration: configuration, logger: logger) {
        try await body(path)
    }
}

/// Runs a ``VarlinkServer`` with `configuration` while `body` runs, then cancels it.
func withRunningServer<Result: Sendable>(
    router: VarlinkRouter,
    configuration: VarlinkServer.Configuration,
    logger: Logger = quietLogger,
    _ body: @escaping @Sendable () async throws -> Result
) async throws -> Result {
    let (listening, listeningContinuation) = AsyncStream.makeStream(of: Void.self)
    let server = VarlinkServer(router: router, configuration: configuration, logger: logger) {
        listeningContinuation.finish()
    }
    return try await withThrowingTaskGroup(of: Result?.self) { group in
        group.addTask {
            // Also ends the wait below if the server fails to start.
            defer { listeningContinuation.finish() }
            try await server.run()
            return nil
        }
        for await _ in listening {}
        group.addTask { try await body() }
        while let result = try await group.next() {
            if let result {
                group.cancelAll()
                return result
            }
        }
        throw ServerStoppedEarly()
    }
}

struct ServerStoppedEarly: Error {}

/// Fails with ``DeadlineExceeded`` if `body` does not finish within `duration`: a bound on how
/// long a test waits for an event, not a pause.
func withDeadline<Result: Sendable>(
    _ duration: Duration = .seconds(10),
    _ body: @Sendable @escaping () async throws -> Result
) async throws -> Result {
    try await withThrowingTaskGroup(of: Result?.self) { group in
        group.addTask { try await body() }
        group.addTask {
            try await Task.sleep(for: duration)
            return nil
        }
        defer { group.cancelAll() }
        guard let result = try await group.next() ?? nil else { throw DeadlineExceeded(duration: duration) }
        return result
    }
}

struct DeadlineExceeded: Error {
    let duration: Duration
}

/// Connects to `path` and runs `body` with the client.
func withClient<Result>(
    _ path: String,
    configuration: VarlinkClient.Configuration = .init(),
    _ body: (VarlinkClient) async throws -> Result
) async throws -> Result {
    try await VarlinkClient.withConnection(to: path, configuration: configuration, logger: quietLogger, body)
}
