#if canImport(Glibc)
import Glibc
#endif
import Synchronization

/// Watches errorbusd.service while a call waits for its answer, and ends the wait when the
/// service's start fails: a call on the socket of a service that cannot start would otherwise
/// wait for the call's whole timeout (30 s) and say nothing of why.
///
/// Nothing is asked while the answer comes quickly: the first look is after `grace`. The watch
/// ends as soon as the service runs (it will answer, or the call's own timeout applies); while it
/// starts, or waits to be started again, it looks every `interval`. A start that ended in failure
/// after the call was made (``ServiceDiagnosis/failed(since:)``) ends the call with ``Failed``.
struct UnitWatch {
    /// The service's start failed while the call waited; `line` says why.
    struct Failed: Error {
        var line: String
        /// Whether it exited 78: its configuration is unusable
        /// (``ServiceDiagnosis/configurationUnusable``).
        var configurationUnusable = false
    }

    /// What the watch found, read by the caller once its call ended.
    private final class Found: Sendable {
        let failed = Mutex<Failed?>(nil)
    }

    var units: SystemdUnits?
    var grace = Duration.milliseconds(300)
    var interval = Duration.milliseconds(200)

    /// Runs `call`, ending it with ``Failed`` when errorbusd.service fails meanwhile.
    func whileWaiting<Result>(_ call: () async throws -> Result) async throws -> Result {
        #if canImport(Glibc)
        guard let units else { return try await call() }
        let calledAt = Self.monotonicMicroseconds()
        // The call runs in this task, the watch in a child. When the watch finds that the start
        // failed, it cancels this task, which ends the call (its connection is closed), and the
        // failure is thrown in place of the call's cancellation.
        let caller = UncheckedTransfer(withUnsafeCurrentTask { $0 })
        let found = Found()
        return try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask {
                do {
                    try await watch(units, since: calledAt)
                } catch let failed as Failed {
                    found.failed.withLock { $0 = failed }
                    // The caller waits for this group, so its task is still there to cancel.
                    caller.value?.cancel()
                }
            }
            defer { group.cancelAll() }
            do {
                return try await call()
            } catch {
                if let failed = found.failed.withLock({ $0 }) { throw failed }
                throw error
            }
        }
        #else
        return try await call()
        #endif
    }

    #if canImport(Glibc)
    /// Returns when watching has nothing more to tell (the service runs, or systemd cannot say);
    /// throws ``Failed`` when a start after `moment` failed. Cancelled when the call ends first.
    private func watch(_ units: SystemdUnits, since moment: UInt64) async throws {
        try await Task.sleep(for: grace)
        while true {
            guard let diagnosis = units.current(), !diagnosis.isRunning else { return }
            if diagnosis.failed(since: moment) {
                throw Failed(line: diagnosis.line(journal: units.lastWords(of: diagnosis)), configurationUnusable: diagnosis.configurationUnusable)
            }
            try await Task.sleep(for: interval)
        }
    }

    /// CLOCK_MONOTONIC in microseconds, the clock of systemd's `…TimestampMonotonic` properties.
    private static func monotonicMicroseconds() -> UInt64 {
        var now = timespec()
        clock_gettime(CLOCK_MONOTONIC, &now)
        return UInt64(now.tv_sec) * 1_000_000 + UInt64(now.tv_nsec) / 1_000
    }
    #endif
}

/// The calling task, handed to the watch (``UnitWatch/whileWaiting(_:)``, ``Deadline``) to
/// cancel. Unchecked, and backed by neither a lock nor copy-on-write: the one use of the value is
/// `cancel()`, which a task allows from any thread, and the task it names outlives the watch (the
/// caller awaits the group the watch runs in before it returns). The call cannot move into the
/// group instead: it is a non-Sendable closure that must run in the caller's task.
struct UncheckedTransfer<Value>: @unchecked Sendable {
    var value: Value
    init(_ value: Value) { self.value = value }
}
