import Synchronization

/// The concurrency slot of the scope a job's run holds, as its operation sees it
/// (``ErrorBus/currentSlot``).
///
/// A run whose work turns out long without weighing on the server's queue — an upload whose body
/// has been on its way for seconds, or is paced by a bandwidth limit of the caller's — lends its
/// slot: it no longer counts toward the scope's adaptive limit, only toward its maximum (see
/// ``ConcurrencyLimit/lend()``). Without it, one long upload holds a scope that is slow-starting
/// at a single slot, and every other job of the scope waits for it to end. Its success then
/// teaches the limit nothing (its length is the transfer's, not the server's answer); its
/// failure teaches as any other does.
public final class RunSlot: Sendable {
    private enum State {
        case held
        case lent
        case given
    }

    private let bus: ErrorBus
    private let job: Job
    private let state = Mutex(State.held)

    init(bus: ErrorBus, job: Job) {
        self.bus = bus
        self.job = job
    }

    /// Lends the slot for the rest of the run; once is enough, later calls do nothing, as do
    /// calls after the run ended. Callable from any task (a body's producer, a watchdog).
    public func lend() {
        let freed = state.withLock { state -> [(Admission.Waiter, SlotGrant)] in
            guard case .held = state else { return [] }
            state = .lent
            // Under this lock: the run cannot end (``giveBack()``) between the two.
            let (answers, wake) = bus.admission.withLock { $0.lend(job, at: bus.clock.now()) }
            bus.wakeScope(job.scope, at: wake)
            return answers
        }
        for (waiter, answer) in freed { waiter.continuation.resume(returning: answer) }
    }

    /// The run ended: whether its slot was lent. Later ``lend()`` calls do nothing.
    func giveBack() -> Bool {
        state.withLock { state in
            defer { state = .given }
            if case .lent = state { return true }
            return false
        }
    }
}

extension ErrorBus {
    @TaskLocal static var runSlot: RunSlot?

    /// The slot the run in whose operation this is read holds, to lend (``RunSlot/lend()``);
    /// `nil` outside an operation, and in a canary's, which holds none. Read it in the
    /// operation's task, and hand it to whatever watches the work.
    public static var currentSlot: RunSlot? { runSlot }
}
