import NIOCore
import Synchronization

/// Graceful shutdown of one connection: an idle connection closes at once; a connection in the
/// middle of a call finishes the call, then closes.
final class ConnectionQuiescer: Sendable {
    private enum State {
        case idle
        case busy
        case shuttingDown
    }

    private let channel: any Channel
    private let state = Mutex(State.idle)

    init(channel: any Channel) {
        self.channel = channel
    }

    /// Called before waiting for the next call; `false` once the server is shutting down.
    func becomeIdle() -> Bool {
        transition(to: .idle)
    }

    /// Called when a call arrives; `false` if the server began shutting down meanwhile.
    func becomeBusy() -> Bool {
        transition(to: .busy)
    }

    /// The server is shutting down.
    func shutDown() {
        let wasIdle = state.withLock { state in
            defer { state = .shuttingDown }
            return state == .idle
        }
        if wasIdle { channel.close(promise: nil) }
    }

    private func transition(to next: State) -> Bool {
        state.withLock { state in
            guard state != .shuttingDown else { return false }
            state = next
            return true
        }
    }
}
