import Foundation
import Synchronization

/// Collects one output stream of a child process as it arrives, and lets a test wait for a piece
/// of text or for the end of the stream.
public final class OutputCollector: Sendable {
    private struct Waiter {
        let id: UInt64
        /// `nil`: waiting for the end of the stream.
        var condition: (@Sendable (String) -> Bool)?
        var continuation: CheckedContinuation<Bool, Never>
    }

    private struct State {
        var bytes: [UInt8] = []
        var finished = false
        var waiters: [Waiter] = []
        var nextWaiter: UInt64 = 0
    }

    private let state = Mutex(State())

    /// Everything received so far.
    public var text: String {
        self.state.withLock { String(decoding: $0.bytes, as: UTF8.self) }
    }

    /// Whether the stream has ended.
    public var isFinished: Bool {
        self.state.withLock { $0.finished }
    }

    func append(_ data: ArraySlice<UInt8>) {
        let satisfied = self.state.withLock { state -> [Waiter] in
            state.bytes.append(contentsOf: data)
            let text = String(decoding: state.bytes, as: UTF8.self)
            let satisfied = state.waiters.filter { waiter in waiter.condition.map { $0(text) } ?? false }
            state.waiters.removeAll { waiter in waiter.condition.map { $0(text) } ?? false }
            return satisfied
        }
        for waiter in satisfied { waiter.continuation.resume(returning: true) }
    }

    func finish() {
        let (waiters, text) = self.state.withLock { state -> ([Waiter], String) in
            state.finished = true
            defer { state.waiters = [] }
            return (state.waiters, String(decoding: state.bytes, as: UTF8.self))
        }
        for waiter in waiters {
            waiter.continuation.resume(returning: waiter.condition.map { $0(text) } ?? true)
        }
    }

    /// Waits until the stream contains `needle`; `false` if it ended without it.
    public func wait(for needle: String) async -> Bool {
        await wait { $0.contains(needle) }
    }

    /// Waits until the stream contains `needle` at least `count` times; `false` if it ended first.
    public func wait(for needle: String, count: Int) async -> Bool {
        await wait { $0.components(separatedBy: needle).count - 1 >= count }
    }

    /// Waits until everything received so far satisfies `condition`; `false` if the stream ended
    /// first or the task was cancelled (a test's time limit).
    public func wait(until condition: @escaping @Sendable (String) -> Bool) async -> Bool {
        await waiting(for: condition)
    }

    /// Waits for the end of the stream (or the task's cancellation).
    public func waitForEnd() async {
        _ = await waiting(for: nil)
    }

    private func waiting(for condition: (@Sendable (String) -> Bool)?) async -> Bool {
        let id = state.withLock { state in
            defer { state.nextWaiter += 1 }
            return state.nextWaiter
        }
        return await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                let answer = self.state.withLock { state -> Bool? in
                    if state.finished {
                        return condition.map { $0(String(decoding: state.bytes, as: UTF8.self)) } ?? true
                    }
                    if let condition, condition(String(decoding: state.bytes, as: UTF8.self)) { return true }
                    if Task.isCancelled { return false }
                    state.waiters.append(Waiter(id: id, condition: condition, continuation: continuation))
                    return nil
                }
                if let answer { continuation.resume(returning: answer) }
            }
        } onCancel: {
            let cancelled = self.state.withLock { state -> Waiter? in
                guard let index = state.waiters.firstIndex(where: { $0.id == id }) else { return nil }
                return state.waiters.remove(at: index)
            }
            cancelled?.continuation.resume(returning: false)
        }
    }
}
