import ErrorBusStore

/// The releases the bus asked for (``SyncService/release(_:)``) that wait for their jobs to have
/// run: each with where the queue stood when it was asked (``JobStore/ReleaseMark``), resumed
/// once the store says every job queued then has run. Asked again after each recorded verdict
/// and each wake-up of the dispatcher, the events that change what the store says: no polling.
struct ReleaseWaits {
    private var waits: [(mark: JobStore.ReleaseMark, continuation: CheckedContinuation<Void, Never>)] = []
    /// The dispatcher stopped: nothing runs any more, and a release waits for nothing.
    private(set) var isOver = false

    var isEmpty: Bool { waits.isEmpty }

    mutating func append(_ mark: JobStore.ReleaseMark, _ continuation: CheckedContinuation<Void, Never>) {
        guard !isOver else { return continuation.resume() }
        waits.append((mark, continuation))
    }

    /// Resumes the releases whose jobs have all run, as `hasRun` reads them from the store.
    mutating func resume(where hasRun: (JobStore.ReleaseMark) -> Bool) {
        waits.removeAll { wait in
            guard hasRun(wait.mark) else { return false }
            wait.continuation.resume()
            return true
        }
    }

    /// The dispatcher stopped: every release waiting, and every one asked for from now on, is over.
    mutating func end() {
        isOver = true
        for wait in waits { wait.continuation.resume() }
        waits = []
    }
}
