import Synchronization

/// Counts a server's open connections against its limit.
final class ConnectionCounter: Sendable {
    let maximum: Int
    private let count = Atomic<Int>(0)

    init(maximum: Int) {
        self.maximum = maximum
    }

    /// Counts one more connection, unless the limit is reached.
    func tryAcquire() -> Bool {
        var current = count.load(ordering: .relaxed)
        while current < maximum {
            let (exchanged, original) = count.compareExchange(
                expected: current,
                desired: current + 1,
                ordering: .relaxed
            )
            if exchanged { return true }
            current = original
        }
        return false
    }

    /// Counts one connection less.
    func release() {
        count.subtract(1, ordering: .relaxed)
    }
}
