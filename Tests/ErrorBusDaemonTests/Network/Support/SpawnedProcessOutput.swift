import Synchronization

/// One output stream of a ``SpawnedProcess``, collected as it arrives, with waits for a piece of
/// text or for the end of the stream.
final class SpawnedProcessOutput: Sendable {
    private struct Waiter {
        /// `nil`: waiting for the end of the stream.
        var needle: String?
        var continuation: CheckedContinuation<Bool, Never>
    }

    private struct State {
        var bytes: [UInt8] = []
        var finished = false
        var waiters: [Waiter] = []
    }

    private let state = Mutex(State())

    /// Everything received so far.
    var text: String {
        state.withLock { String(decoding: $0.bytes, as: UTF8.self) }
    }

    /// Everything received so far, line by line.
    var lines: [String] { text.split(separator: "\n").map(String.init) }

    func append(_ data: ArraySlice<UInt8>) {
        let satisfied = state.withLock { state -> [Waiter] in
            state.bytes.append(contentsOf: data)
            let text = String(decoding: state.bytes, as: UTF8.self)
            let satisfied = state.waiters.filter { waiter in waiter.needle.map { text.contains($0) } ?? false }
            state.waiters.removeAll { waiter in waiter.needle.map { text.contains($0) } ?? false }
            return satisfied
        }
        for waiter in satisfied { waiter.continuation.resume(returning: true) }
    }

    func finish() {
        let (waiters, text) = state.withLock { state -> ([Waiter], String) in
            state.finished = true
            defer { state.waiters = [] }
            return (state.waiters, String(decoding: state.bytes, as: UTF8.self))
        }
        for waiter in waiters {
            waiter.continuation.resume(returning: waiter.needle.map { text.contains($0) } ?? true)
        }
    }

    /// Waits until the stream contains `needle`; `false` if it ended without it.
    func wait(for needle: String) async -> Bool {
        await withCheckedContinuation { continuation in
            let answer = state.withLock { state -> Bool? in
                let text = String(decoding: state.bytes, as: UTF8.self)
                if text.contains(needle) { return true }
                if state.finished { return false }
                state.waiters.append(Waiter(needle: needle, continuation: continuation))
                return nil
            }
            if let answer { continuation.resume(returning: answer) }
        }
    }

    /// Waits for the end of the stream.
    func waitForEnd() async {
        _ = await withCheckedContinuation { continuation in
            let finished = state.withLock { state -> Bool in
                if state.finished { return true }
                state.waiters.append(Waiter(needle: nil, continuation: continuation))
                return false
            }
            if finished { continuation.resume(returning: true) }
        }
    }
}
