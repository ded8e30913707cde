import Logging
import Synchronization

/// A log handler that keeps what it is given and lets a test wait for a message.
final class LogRecorder: Sendable {
    struct Entry: Sendable {
        var level: Logger.Level
        var message: String
    }

    private struct State {
        var entries: [Entry] = []
        var waiters: [(condition: @Sendable ([Entry]) -> Bool, continuation: CheckedContinuation<Void, Never>)] = []
    }

    private let state = Mutex(State())

    /// A logger whose every message (trace and up) this recorder keeps.
    var logger: Logger {
        var logger = Logger(label: "errorbus-test") { _ in Handler(recorder: self) }
        logger.logLevel = .trace
        return logger
    }

    /// Everything logged so far.
    var entries: [Entry] { state.withLock { $0.entries } }

    /// Waits until a message containing `needle` has been logged.
    func wait(for needle: String) async {
        await wait { entries in entries.contains { $0.message.contains(needle) } }
    }

    /// Waits until everything logged so far satisfies `condition`.
    func wait(until condition: @escaping @Sendable ([Entry]) -> Bool) async {
        await withCheckedContinuation { continuation in
            let found = state.withLock { state in
                if condition(state.entries) { return true }
                state.waiters.append((condition, continuation))
                return false
            }
            if found { continuation.resume() }
        }
    }

    fileprivate func append(_ entry: Entry) {
        let ready = state.withLock { state in
            state.entries.append(entry)
            let entries = state.entries
            let ready = state.waiters.filter { $0.condition(entries) }.map(\.continuation)
            state.waiters.removeAll { $0.condition(entries) }
            return ready
        }
        for continuation in ready { continuation.resume() }
    }

    private struct Handler: LogHandler {
        let recorder: LogRecorder
        var logLevel: Logger.Level = .trace
        var metadata: Logger.Metadata = [:]

        subscript(metadataKey key: String) -> Logger.Metadata.Value? {
            get { metadata[key] }
            set { metadata[key] = newValue }
        }

        func log(event: LogEvent) {
            recorder.append(Entry(level: event.level, message: "\(event.message)"))
        }
    }
}
