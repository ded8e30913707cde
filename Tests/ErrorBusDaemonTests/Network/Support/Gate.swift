/// Holds a task at ``pass()`` until a test calls ``open()`` (once per pass).
actor Gate {
    private var waiter: CheckedContinuation<Void, Never>?
    private var openings = 0

    /// Waits for an opening, or takes one that came first.
    func pass() async {
        if openings > 0 {
            openings -= 1
            return
        }
        await withCheckedContinuation { waiter = $0 }
    }

    /// Lets one ``pass()`` through.
    func open() {
        if let waiter {
            self.waiter = nil
            waiter.resume()
        } else {
            openings += 1
        }
    }
}
