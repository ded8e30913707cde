import NIOCore
import Synchronization

/// The connections a server has set up but not yet handed to a task.
///
/// A connection's `NIOAsyncChannel` must be closed through `executeThenClose`: dropping it
/// while its channel is open is a precondition failure in NIO. The accept loop can end (graceful
/// shutdown, cancellation) with connections still on their way to it, buffered in the listening
/// channel's stream or still being set up; this registry lets the server close those when it
/// stops, and refuses to set up any after that.
final class PendingConnections: Sendable {
    private struct State {
        var closed = false
        var connections: [ObjectIdentifier: NIOAsyncChannel<ByteBuffer, ByteBuffer>] = [:]
    }

    private let state = Mutex(State())

    /// Wraps `channel` and registers it; `nil` (and the channel closed) once the server stops.
    func register(
        _ channel: any Channel,
        wrap: (any Channel) throws -> NIOAsyncChannel<ByteBuffer, ByteBuffer>
    ) throws -> NIOAsyncChannel<ByteBuffer, ByteBuffer>? {
        let wrapped = try state.withLock { state -> NIOAsyncChannel<ByteBuffer, ByteBuffer>? in
            guard !state.closed else { return nil }
            let wrapped = try wrap(channel)
            state.connections[ObjectIdentifier(channel)] = wrapped
            return wrapped
        }
        if wrapped == nil { channel.close(promise: nil) }
        return wrapped
    }

    /// Takes a connection the accept loop is about to serve.
    func take(_ connection: NIOAsyncChannel<ByteBuffer, ByteBuffer>) {
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
