import Synchronization

/// A value set once and awaited once, in either order.
final class OneShot<Value: Sendable>: Sendable {
    private enum State {
        case empty
        case waiting(CheckedContinuation<Value, Never>)
        case fulfilled(Value)
        case consumed
    }

    private let state = Mutex(State.empty)

    /// Sets the value; later calls are ignored.
    func fulfill(_ value: Value) {
        let waiter: CheckedContinuation<Value, Never>? = state.withLock { state in
            switch state {
            case .empty:
                state = .fulfilled(value)
                return nil
            case .waiting(let continuation):
                state = .consumed
                return continuation
            case .fulfilled, .consumed:
                return nil
            }
        }
        waiter?.resume(returning: value)
    }

    /// Waits for the value. Call once.
    var value: Value {
        get async {
            await withCheckedContinuation { continuation in
                let ready: Value? = state.withLock { state in
                    switch state {
                    case .empty:
                        state = .waiting(continuation)
                        return nil
                    case .fulfilled(let value):
                        state = .consumed
                        return value
                    case .waiting, .consumed:
                        preconditionFailure("OneShot awaited twice")
                    }
                }
                if let ready { continuation.resume(returning: ready) }
            }
        }
    }
}

/// Holds the value of a `perform` operation until the caller picks it up.
final class ValueBox<Value: Sendable>: Sendable {
    private let storage = Mutex<Value?>(nil)

    func store(_ value: Value) {
        storage.withLock { $0 = value }
    }

    func take() -> Value? {
        storage.withLock { value in
            defer { value = nil }
            return value
        }
    }
}
