@testable import ErrorBusHTTP
import NIOCore
import NIOEmbedded
import Synchronization
import Testing

import ErrorBusDaemon

@Suite struct DeadlineSweeperTests {
    /// Which actions ran, in order.
    private final class Ran: Sendable {
        private let names = Mutex<[String]>([])
        func record(_ name: String) { names.withLock { $0.append(name) } }
        var all: [String] { names.withLock { $0 } }
    }

    /// A sweeper on a loop whose time only the test moves, what its actions recorded, and the
    /// loop's time at the start.
    private func withSweeper(_ body: (DeadlineSweeper, NIOAsyncTestingEventLoop, Ran, NIODeadline) async throws -> Void) async throws {
        let loop = NIOAsyncTestingEventLoop()
        try await body(DeadlineSweeper(eventLoop: loop), loop, Ran(), loop.now)
        await loop.shutdownGracefully()
    }

    @Test func anActionRunsOnceItsDeadlineHasPassedAndNotBefore() async throws {
        try await withSweeper { sweeper, loop, ran, start in
            _ = sweeper.add(start + .seconds(10)) { ran.record("a") }

            await loop.advanceTime(to: start + .seconds(9))
            #expect(ran.all.isEmpty)
            #expect(sweeper.count == 1)
            await loop.advanceTime(to: start + .seconds(10))
            #expect(ran.all == ["a"])
            #expect(sweeper.count == 0)
            await loop.advanceTime(to: start + .seconds(60))
            #expect(ran.all == ["a"])
        }
    }

    @Test func aRemovedDeadlineNeverRuns() async throws {
        try await withSweeper { sweeper, loop, ran, start in
            let removed = sweeper.add(start + .seconds(10)) { ran.record("removed") }
            _ = sweeper.add(start + .seconds(20)) { ran.record("kept") }
            sweeper.remove(removed)

            await loop.advanceTime(to: start + .seconds(30))
            #expect(ran.all == ["kept"])
        }
    }

    @Test func deadlinesAddedInAnyOrderEachRunOnTime() async throws {
        try await withSweeper { sweeper, loop, ran, start in
            _ = sweeper.add(start + .seconds(20)) { ran.record("20 s") }
            // Earlier than the timer armed for the first: the sweeper must wake sooner.
            _ = sweeper.add(start + .seconds(10)) { ran.record("10 s") }
            _ = sweeper.add(start + .seconds(30)) { ran.record("30 s") }

            await loop.advanceTime(to: start + .seconds(10))
            #expect(ran.all == ["10 s"])
            await loop.advanceTime(to: start + .seconds(20))
            #expect(ran.all == ["10 s", "20 s"])
            // One added while the sweeper waits for 30 s, due before it.
            _ = sweeper.add(start + .seconds(25)) { ran.record("25 s") }
            await loop.advanceTime(to: start + .seconds(25))
            #expect(ran.all == ["10 s", "20 s", "25 s"])
            await loop.advanceTime(to: start + .seconds(30))
            #expect(ran.all == ["10 s", "20 s", "25 s", "30 s"])
            #expect(sweeper.count == 0)
        }
    }

    @Test func aDeadlineAlreadyPastRunsAtOnce() async throws {
        try await withSweeper { sweeper, loop, ran, start in
            _ = sweeper.add(start - .seconds(1)) { ran.record("late") }
            await loop.run()
            #expect(ran.all == ["late"])
        }
    }
}
