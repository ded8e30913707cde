import ErrorBus
import ErrorBusTesting
import Testing

@testable import ErrorBusDaemon

/// The debouncer on a manual clock: one callback per burst, no real time passing.
@Suite(.timeLimit(.minutes(1)))
struct NetworkChangeCoalescerTests {
    @Test func oneCallbackPerBurst() async throws {
        let clock = ManualClock()
        let coalescer = NetworkChangeCoalescer(quiet: .milliseconds(500), maximumDelay: .seconds(5), clock: Timeline(clock))
        let (changes, changed) = AsyncStream.makeStream(of: NetworkChange.self)
        await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask {
                try await coalescer.run { change in changed.yield(change) }
            }
            var received = changes.makeAsyncIterator()

            // A burst of three notifications over 300 ms.
            coalescer.record(NetworkChange(links: 1))
            await clock.sleepers(atLeast: 1)
            clock.advance(by: .milliseconds(200))
            coalescer.record(NetworkChange(addresses: 1))
            clock.advance(by: .milliseconds(100))
            coalescer.record(NetworkChange(routes: 2))
            // 499 ms after the last one: still collecting.
            clock.advance(by: .milliseconds(499))
            await clock.sleepers(atLeast: 1)
            #expect(clock.nextDeadline == .init(offset: .milliseconds(800)))
            clock.advance(by: .milliseconds(1))
            #expect(await received.next() == NetworkChange(links: 1, addresses: 1, routes: 2))

            // A second burst, much later, is a second callback.
            clock.advance(by: .seconds(60))
            coalescer.record(NetworkChange(routes: 1))
            await clock.sleepers(atLeast: 1)
            clock.advance(by: .milliseconds(500))
            #expect(await received.next() == NetworkChange(routes: 1))

            group.cancelAll()
        }
    }

    @Test func notificationsDuringACallbackFormTheNextBurst() async throws {
        let clock = ManualClock()
        let coalescer = NetworkChangeCoalescer(quiet: .milliseconds(500), maximumDelay: .seconds(5), clock: Timeline(clock))
        let (entered, enter) = AsyncStream.makeStream(of: NetworkChange.self)
        let gate = Gate()
        await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask {
                try await coalescer.run { change in
                    enter.yield(change)
                    await gate.pass()
                }
            }
            var callbacks = entered.makeAsyncIterator()
            coalescer.record(NetworkChange(links: 1))
            await clock.sleepers(atLeast: 1)
            clock.advance(by: .milliseconds(500))
            #expect(await callbacks.next() == NetworkChange(links: 1))

            // The callback is still running: these wait for it, then make one more.
            coalescer.record(NetworkChange(addresses: 1))
            coalescer.record(NetworkChange(addresses: 1))
            await gate.open()
            await clock.sleepers(atLeast: 1)
            clock.advance(by: .milliseconds(500))
            #expect(await callbacks.next() == NetworkChange(addresses: 2))
            await gate.open()
            group.cancelAll()
        }
    }

    @Test func cancellationEndsRunWhileWaiting() async throws {
        let clock = ManualClock()
        let coalescer = NetworkChangeCoalescer(quiet: .milliseconds(500), maximumDelay: .seconds(5), clock: Timeline(clock))
        let task = Task { try await coalescer.run { _ in } }
        coalescer.record(NetworkChange(links: 1))
        await clock.sleepers(atLeast: 1)
        task.cancel()
        await #expect(throws: CancellationError.self) { try await task.value }
    }
}
