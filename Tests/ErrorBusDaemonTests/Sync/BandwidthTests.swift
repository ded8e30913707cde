import ErrorBus
import ErrorBusStore
import ErrorBusTesting
import Foundation
import NIOCore
import Testing

@testable import ErrorBusDaemon

/// `sync.bandwidth`: a rate or a timetable, read as rclone's `--bwlimit` writes it, and the
/// limiter that paces every upload body together, on an injected clock.
@Suite struct BandwidthTests {
    static func parse(_ text: String) throws -> Bandwidth {
        try Bandwidth.parse(text).get()
    }

    /// Local time on a fixed Monday: 2026-11-30 is one.
    static func monday(_ hour: Int, _ minute: Int, day: Int = 30) -> Date {
        Calendar.current.date(from: DateComponents(year: 2026, month: 11, day: day, hour: hour, minute: minute))!
    }

    @Test func aRateOrOffOrATimetable() throws {
        #expect(try Self.parse("off").isUnlimited && Self.parse("").isUnlimited)
        let flat = try Self.parse("512KiB/s")
        #expect(flat.rate(at: Date()).rate == 512 * 1024 && flat.rate(at: Date()).until == nil)
        #expect(try Self.parse("2MiB").rate(at: Date()).rate == 2 << 20)

        let daily = try Self.parse("08:00,512KiB/s 19:00,off")
        #expect(daily.description == "08:00,512KiB/s 19:00,off")
        let noon = daily.rate(at: Self.monday(12, 0))
        #expect(noon.rate == Int64(512 * 1024) && noon.until == Self.monday(19, 0), "\(noon)")
        #expect(daily.rate(at: Self.monday(19, 0)).rate == nil)
        // Before the first entry: the day before's last.
        #expect(daily.rate(at: Self.monday(7, 59)).rate == nil)
        #expect(daily.rate(at: Self.monday(7, 59)).until == Self.monday(8, 0))
        // After the last: the next day's first.
        #expect(daily.rate(at: Self.monday(23, 0)).until == Self.monday(23, 0).addingTimeInterval(9 * 3600))

        let weekly = try Self.parse("Mon-08:00,1MiB/s Sat-00:00,off")
        #expect(weekly.rate(at: Self.monday(9, 0)).rate == 1 << 20)
        // Saturday and Sunday: off; Monday before 08:00 still Sunday's.
        #expect(weekly.rate(at: Self.monday(9, 0, day: 28)).rate == nil)
        #expect(weekly.rate(at: Self.monday(7, 0)).rate == nil)
        #expect(weekly.rate(at: Self.monday(7, 0)).until == Self.monday(8, 0))
        #expect(weekly.rate(at: Self.monday(9, 0, day: 29)).until == Self.monday(8, 0))
    }

    @Test(arguments: [
        ("fast", "expected a rate of at least 1KiB/s (512KiB/s, 2MiB/s) or off, got \"fast\""),
        ("100/s", "expected a rate of at least 1KiB/s (512KiB/s, 2MiB/s) or off, got \"100/s\""),
        ("8:00,1MiB", "\"8:00,1MiB\": expected a time HH:MM (08:00), got \"8:00\""),
        ("08:00,1MiB Sat-09:00,off", "\"Sat-09:00,off\": either every entry names a day (Mon-08:00) or none does"),
        ("Mo-08:00,1MiB", "\"Mo-08:00,1MiB\": expected a day Mon, Tue, Wed, Thu, Fri, Sat or Sun before -"),
        ("08:00,1MiB 08:00,off", "\"08:00,off\": that time is listed twice"),
        ("08:00 1MiB", "\"08:00\": expected TIME,RATE (08:00,512KiB/s)"),
    ])
    func aSettingThatCannotBeReadSaysWhy(text: String, reason: String) {
        #expect(throws: BandwidthError(reason)) { try Bandwidth.parse(text).get() }
    }

    /// Each slice waits for its turn: 1 MiB at 64 KiB/s takes 16 s of the clock, in slices of a
    /// twentieth of a second's bytes, with no burst after the first slice.
    @Test func bodiesArePacedEvenlyOnTheClock() async throws {
        let clock = ManualClock()
        let limiter = BandwidthLimiter(try Self.parse("64KiB/s"), clock: Timeline(clock))
        let chunks = (0..<16).map { _ in ByteBuffer(repeating: 0, count: 64 * 1024) }
        // The body is read while the clock moves to each sleeper's deadline in turn.
        let slices = try await withThrowingTaskGroup(of: [(Int, Duration)]?.self) { group in
            group.addTask {
                var slices: [(Int, Duration)] = []
                let start = clock.now
                for try await slice in limiter.pace(Chunks(chunks)) { slices.append((slice.readableBytes, start.duration(to: clock.now))) }
                return slices
            }
            group.addTask {
                while !Task.isCancelled {
                    await clock.sleepers(atLeast: 1)
                    clock.advanceToNextDeadline()
                }
                return nil
            }
            defer { group.cancelAll() }
            while let result = try await group.next() {
                if let result { return result }
            }
            return []
        }
        #expect(slices.reduce(0) { $0 + $1.0 } == 1 << 20)
        #expect(slices.allSatisfy { $0.0 <= 3277 + 1024 }, "slices of a twentieth of a second's bytes")
        let last = try #require(slices.last)
        // The last slice starts when all but it have had their time.
        let expected = Double((1 << 20) - last.0) / Double(64 * 1024)
        #expect(abs(Self.seconds(last.1) - expected) < 0.2, "\(last.1) for \(expected) s")
    }

    /// A timetable switches the rate at its time on the injected clock: from 18:59:50, 64 KiB/s
    /// until 19:00, then no limit.
    @Test func aTimetableSwitchesTheRateAtItsTime() async throws {
        let clock = ManualClock()
        let start = Self.monday(18, 59).addingTimeInterval(50)
        let limiter = BandwidthLimiter(try Self.parse("08:00,64KiB/s 19:00,off"), clock: Timeline(clock, startDate: start))
        #expect(limiter.current.rate == 64 * 1024 && limiter.current.until == Self.monday(19, 0))
        clock.advance(by: .seconds(10))
        #expect(limiter.current.rate == nil)
        // No limit: a megabyte's turn comes at once.
        try await limiter.take(1 << 20)
        try await limiter.take(1 << 20)
    }

    /// A reload's new setting applies to the next slice.
    @Test func aNewSettingAppliesAtOnce() async throws {
        let clock = ManualClock()
        let limiter = BandwidthLimiter(.unlimited, clock: Timeline(clock))
        try await limiter.take(1 << 20)
        limiter.bandwidth = try Self.parse("1MiB/s")
        #expect(limiter.current.rate == 1 << 20)
        limiter.bandwidth = .unlimited
        try await limiter.take(1 << 30)
    }

    /// A file that takes an hour or more at the limit is said so once, not at every attempt;
    /// one that takes less is not.
    @Test func aFileTooBigForTheLimitIsSaidOnce() throws {
        let limiter = BandwidthLimiter(try Self.parse("1KiB/s"), clock: Timeline(ManualClock()))
        let big = OutboxFile(id: String(repeating: "a", count: 64), service: "sync", fileName: "big.bin", path: "/outbox/big.bin", size: 8 << 20)
        let small = OutboxFile(id: String(repeating: "b", count: 64), service: "sync", fileName: "small.bin", path: "/outbox/small.bin", size: 1 << 20)
        #expect(limiter.hoursNeededFirstTime(big) == 3)
        #expect(limiter.hoursNeededFirstTime(big) == nil)
        #expect(limiter.hoursNeededFirstTime(small) == nil)
    }

    static func seconds(_ duration: Duration) -> Double {
        Double(duration.components.seconds) + Double(duration.components.attoseconds) * 1e-18
    }
}

/// Chunks given in advance, as a body's.
private struct Chunks: AsyncSequence, Sendable {
    typealias Element = ByteBuffer
    let chunks: [ByteBuffer]
    init(_ chunks: [ByteBuffer]) { self.chunks = chunks }
    func makeAsyncIterator() -> Iterator { Iterator(chunks: chunks[...]) }
    struct Iterator: AsyncIteratorProtocol {
        var chunks: ArraySlice<ByteBuffer>
        mutating func next() async -> ByteBuffer? { chunks.popFirst() }
    }
}
