import ServiceLifecycle

/// Runs `operation` until graceful shutdown cancels it. What the cancellation makes the operation
/// throw (`CancellationError` from a sleep, a closed channel…) is how it stops, not a failure:
/// the service ends cleanly instead of making the service group cancel everything else.
func untilGracefulShutdown(_ operation: @escaping @Sendable () async throws -> Void) async throws {
    do {
        try await cancelWhenGracefulShutdown(operation)
    } catch where Task.isShuttingDownGracefully {
        // `cancelWhenGracefulShutdown` cancels only the operation's own child task, so the
        // shutdown having begun is what tells this apart from a failure.
        return
    }
}
