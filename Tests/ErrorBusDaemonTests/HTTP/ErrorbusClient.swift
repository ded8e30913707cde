import AsyncHTTPClient
import ErrorBusHTTP
import NIOCore

/// Runs `body` with a client configured as errorbusd configures its own, giving up on a refused
/// connection after `connectTimeout` (AsyncHTTPClient retries until then), and shuts it down
/// however `body` ends.
func withErrorbusClient<Value>(
    connectTimeout: TimeAmount = .milliseconds(500),
    _ body: (HTTPClient) async throws -> Value
) async throws -> Value {
    let client = HTTPClient(eventLoopGroupProvider: .singleton, configuration: .errorbusAPI(connectTimeout: connectTimeout))
    let result: Result<Value, any Error>
    do {
        result = .success(try await body(client))
    } catch {
        result = .failure(error)
    }
    try await client.shutdown()
    return try result.get()
}
