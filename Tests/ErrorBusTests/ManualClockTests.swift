import ErrorBusTesting
import Testing

/// The test clock's waits end when their task is cancelled, so that a test's time limit ends a
/// test waiting for timers nothing will set, rather than leaving the run hanging.
@Suite(.timeLimit(.minutes(1)))
struct ManualClockTests {
    @Test func aWaitForSleepersEndsWhenItsTaskIsCancelled() async {
        let clock = ManualClock()
        let waiting = Task { await clock.sleepers(atLeast: 1) }
        waiting.cancel()
        await waiting.value
        // Cancelled before it waits, as after.
        let cancelledFirst = Task {
            withUnsafeCurrentTask { $0?.cancel() }
            await clock.sleepers(atLeast: 1)
        }
        await cancelledFirst.value
        // A wait not cancelled still ends when a task sleeps.
        let waited = Task { await clock.sleepers(atLeast: 1) }
        let sleeper = Task { try await clock.sleep(for: .seconds(1)) }
        await waited.value
        clock.advance(by: .seconds(1))
        try? await sleeper.value
    }
}
