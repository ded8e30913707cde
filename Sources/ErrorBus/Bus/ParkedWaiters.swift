/// Callers waiting until the bus holds a number of parked jobs: tests that must know a burst of
/// failures has been parked before they move the clock (`ErrorBusTesting`'s
/// `waitUntilParked(_:)`). Costs one comparison per parked job while nobody waits.
struct ParkedWaiters {
    private var waiting: [(id: UInt64, count: Int, continuation: CheckedContinuation<Void, Never>)] = []
    private var nextID: UInt64 = 0

    /// A new waiter's identity, for ``cancel(_:)``.
    mutating func makeID() -> UInt64 {
        nextID += 1
        return nextID
    }

    /// Queues a waiter, or lets it go at once when `parked` already reaches its count.
    mutating func wait(_ id: UInt64, for count: Int, parked: Int, _ continuation: CheckedContinuation<Void, Never>) {
        if parked >= count || Task.isCancelled {
            continuation.resume()
        } else {
            waiting.append((id, count, continuation))
        }
    }

    /// Lets one waiter go (its task was cancelled).
    mutating func cancel(_ id: UInt64) {
        waiting.removeAll { waiter in
            guard waiter.id == id else { return false }
            waiter.continuation.resume()
            return true
        }
    }

    /// Lets go the waiters whose count `parked` reaches.
    mutating func resume(parked: Int) {
        guard !waiting.isEmpty else { return }
        waiting.removeAll { waiter in
            guard parked >= waiter.count else { return false }
            waiter.continuation.resume()
            return true
        }
    }

    /// Lets every waiter go (the bus stopped).
    mutating func resumeAll() {
        for waiter in waiting { waiter.continuation.resume() }
        waiting.removeAll()
    }
}

extension ErrorBus {
    /// Returns once the bus holds at least `count` parked jobs, or has stopped.
    package func parkedJobs(reaching count: Int) async {
        guard lifecycle != .stopped else { return }
        let id = parkedWaiters.makeID()
        await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                parkedWaiters.wait(id, for: count, parked: parkedTotal, continuation)
            }
        } onCancel: {
            // A cancellation handler cannot await the actor that holds the waiter; the hop is
            // a task of its own, which ends as soon as it has let the waiter go.
            Task { await self.cancelParkedWaiter(id) }
        }
    }

    private func cancelParkedWaiter(_ id: UInt64) {
        parkedWaiters.cancel(id)
    }
}
