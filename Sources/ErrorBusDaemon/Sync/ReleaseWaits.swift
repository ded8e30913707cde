import ErrorBusStore
import Synchronization

/// The releases the bus asked for (``SyncService/release(_:)``) that wait for their jobs to have
/// run: each with where the queue stood when it was asked (``JobStore/ReleaseMark``), resumed
/// once the store says every job queued then has run. Looked at again after each recorded
/// verdict and each wake-up of the dispatcher, the events that change what the store says: no
/// polling. A wait also ends when the dispatcher stops or its task is cancelled.
final class ReleaseWaits: Sendable {
    private struct State {
        var waits: [UInt64: (mark: JobStore.ReleaseMark, continuation: CheckedContinuation<Void, Never>)] = [:]
        var nextID: UInt64 = 0
        /// The dispatcher stopped: nothing runs any more, and a release waits for nothing.
        var isOver = false
    }

    private let state = Mutex(State())

    var isEmpty: Bool { state.withLock { $0.waits.isEmpty } }

    /// Waits until the jobs of `mark` have run, as `hasRun` reads them from the store: at once,
    /// or at a later ``resume(where:)``. Called on the dispatcher's actor, as `resume(where:)` is,
    /// so that no verdict is recorded between the first look and the wait.
    func wait(for mark: JobStore.ReleaseMark, hasRun: (JobStore.ReleaseMark) -> Bool) async {
        let id = state.withLock { state in
            state.nextID += 1
            return state.nextID
        }
        await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                let waits = !hasRun(mark) && state.withLock { state in
                    guard !state.isOver, !Task.isCancelled else { return false }
                    state.waits[id] = (mark, continuation)
                    return true
                }
                if !waits { continuation.resume() }
            }
        } onCancel: {
            state.withLock { $0.waits.removeValue(forKey: id) }?.continuation.resume()
        }
    }

    /// Resumes the releases whose jobs have all run, as `hasRun` reads them from the store.
    func resume(where hasRun: (JobStore.ReleaseMark) -> Bool) {
        let marks = state.withLock { $0.waits.mapValues(\.mark) }
        let ran = marks.filter { hasRun($0.value) }.keys
        let resumed = state.withLock { state in ran.compactMap { state.waits.removeValue(forKey: $0)?.continuation } }
        for continuation in resumed { continuation.resume() }
    }

    /// The dispatcher stopped: every release waiting, and every one asked for from now on, is over.
    func end() {
        let resumed = state.withLock { state in
            state.isOver = true
            defer { state.waits = [:] }
            return state.waits.values.map(\.continuation)
        }
        for continuation in resumed { continuation.resume() }
    }
}
