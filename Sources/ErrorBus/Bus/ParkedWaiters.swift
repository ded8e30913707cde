/// Callers waiting until the bus holds a number of parked jobs: tests that must know a burst of
/// failures has been parked before they move the clock (`ErrorBusTesting`'s
/// `waitUntilParked(_:)`). Costs one comparison per parked job while nobody waits.
struct ParkedWaiters {
    private var waiting: [(count: Int, continuation: CheckedContinuation<Void, Never>)] = []

    /// Queues a waiter, or lets it go at once when `parked` already reaches its count.
    mutating func wait(for count: Int, parked: Int, _ continuation: CheckedContinuation<Void, Never>) {
        if parked >= count {
            continuation.resume()
        } else {
            waiting.append((count, continuation))
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
        await withCheckedContinuation { continuation in
            parkedWaiters.wait(for: count, parked: parkedTotal, continuation)
        }
    }
}
