import Synchronization

/// A wait for one of errorbusd's answers that the call itself does not bound (a stream's
/// replies, which may rightly be far apart), bounded: past `timeout`, the wait ends with
/// ``ControlConnection/timedOut(_:after:)``.
///
/// As ``UnitWatch``, the wait runs in the caller's task and a child cancels it, which closes the
/// connection and ends the wait.
enum Deadline {
    private final class Expired: Sendable {
        let flag = Atomic(false)
    }

    static func answer<Result>(within timeout: Duration, socket: String, _ wait: () async throws -> Result) async throws -> Result {
        let caller = UncheckedTransfer(withUnsafeCurrentTask { $0 })
        let expired = Expired()
        return try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask {
                try await Task.sleep(for: timeout)
                expired.flag.store(true, ordering: .relaxed)
                // The caller waits for this group, so its task is still there to cancel.
                caller.value?.cancel()
            }
            defer { group.cancelAll() }
            do {
                return try await wait()
            } catch where expired.flag.load(ordering: .relaxed) {
                throw ControlConnection.timedOut(socket, after: timeout)
            }
        }
    }
}
