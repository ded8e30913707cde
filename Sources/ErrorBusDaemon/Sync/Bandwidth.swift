import ErrorBus
import ErrorBusStore
import ErrorBusUnits
import NIOCore
import Synchronization
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// `sync.bandwidth`: the rate upload bodies may take together, in bytes per second, or a
/// timetable of rates by time of day or day of week, as rclone's `--bwlimit` writes it:
///
///     512KiB/s
///     08:00,512KiB/s 19:00,off
///     Mon-08:00,1MiB/s Sat-00:00,off
///
/// At a time, the rate is the last entry's at or before it; before the first, the last of the
/// day (or week) before. `off` is no limit.
package struct Bandwidth: Sendable, Equatable, CustomStringConvertible {
    /// One entry: from `minute` of the day (or of the week, from Monday 00:00), `rate` bytes per
    /// second, `nil` for no limit.
    package struct Entry: Sendable, Equatable {
        package var minute: Int
        package var rate: Int64?
    }

    /// The entries in time order; empty: no limit.
    package private(set) var entries: [Entry]
    /// Whether ``Entry/minute`` counts from Monday 00:00 rather than midnight.
    package private(set) var weekly: Bool

    /// No limit.
    package static let unlimited = Bandwidth(entries: [], weekly: false)

    private static let days = ["mon", "tue", "wed", "thu", "fri", "sat", "sun"]

    private init(entries: [Entry], weekly: Bool) {
        self.entries = entries
        self.weekly = weekly
    }

    /// What a setting of `sync.bandwidth` says, or why it cannot be read.
    package static func parse(_ text: String) -> Result<Bandwidth, BandwidthError> {
        let items = text.split(whereSeparator: \.isWhitespace)
        guard !items.isEmpty else { return .success(.unlimited) }
        if items.count == 1, !items[0].contains(",") {
            return rate(items[0]).map { Bandwidth(entries: $0.map { [Entry(minute: 0, rate: $0)] } ?? [], weekly: false) }
        }
        var entries: [Entry] = []
        var weekly: Bool?
        for item in items {
            let fields = item.split(separator: ",", omittingEmptySubsequences: false)
            guard fields.count == 2 else { return .failure(.init("\"\(item)\": expected TIME,RATE (08:00,512KiB/s)")) }
            var time = fields[0]
            var day = 0
            let hasDay = time.contains("-")
            if hasDay {
                let parts = time.split(separator: "-", maxSplits: 1)
                guard let index = days.firstIndex(of: parts[0].lowercased()) else {
                    return .failure(.init("\"\(item)\": expected a day Mon, Tue, Wed, Thu, Fri, Sat or Sun before -"))
                }
                day = index
                time = parts.count == 2 ? parts[1] : ""
            }
            guard weekly == nil || weekly == hasDay else {
                return .failure(.init("\"\(item)\": either every entry names a day (Mon-08:00) or none does"))
            }
            weekly = hasDay
            let clock = time.split(separator: ":", omittingEmptySubsequences: false)
            guard clock.count == 2, clock[0].count == 2, clock[1].count == 2, let hour = Int(clock[0]), let minute = Int(clock[1]),
                (0..<24).contains(hour), (0..<60).contains(minute)
            else {
                return .failure(.init("\"\(item)\": expected a time HH:MM (08:00), got \"\(time)\""))
            }
            let rate: Int64?
            switch Self.rate(fields[1]) {
            case .success(let value): rate = value
            case .failure(let error): return .failure(.init("\"\(item)\": \(error.reason)"))
            }
            let at = day * 24 * 60 + hour * 60 + minute
            guard !entries.contains(where: { $0.minute == at }) else { return .failure(.init("\"\(item)\": that time is listed twice")) }
            entries.append(Entry(minute: at, rate: rate))
        }
        entries.sort { $0.minute < $1.minute }
        return .success(Bandwidth(entries: entries, weekly: weekly ?? false))
    }

    /// A rate: a size per second (`512KiB/s`, `/s` optional), or `off`.
    private static func rate(_ text: Substring) -> Result<Int64?, BandwidthError> {
        if text.lowercased() == "off" { return .success(nil) }
        let size = text.lowercased().hasSuffix("/s") ? text.dropLast(2) : text
        guard let bytes = ByteSizeFormat.parse(String(size)), bytes >= 1024 else {
            return .failure(.init("expected a rate of at least 1KiB/s (512KiB/s, 2MiB/s) or off, got \"\(text)\""))
        }
        return .success(bytes)
    }

    /// Whether nothing is ever limited.
    package var isUnlimited: Bool { entries.allSatisfy { $0.rate == nil } }

    /// The rate in force at `date` (`nil`: no limit), and when it changes next (`nil`: never).
    func rate(at date: Date, calendar: Calendar = .current) -> (rate: Int64?, until: Date?) {
        guard let last = entries.last else { return (nil, nil) }
        guard entries.count > 1 else { return (last.rate, nil) }
        let parts = calendar.dateComponents([.weekday, .hour, .minute, .second, .nanosecond], from: date)
        // Calendar's weekday: 1 is Sunday; here 0 is Monday.
        let day = weekly ? ((parts.weekday ?? 2) + 5) % 7 : 0
        let minute = day * 24 * 60 + (parts.hour ?? 0) * 60 + (parts.minute ?? 0)
        let current = entries.last { $0.minute <= minute } ?? last
        let next = entries.first { $0.minute > minute } ?? entries[0]
        let cycle = (weekly ? 7 : 1) * 24 * 60
        let minutesAhead = (next.minute - minute + cycle - 1) % cycle + 1
        let intoMinute = Double(parts.second ?? 0) + Double(parts.nanosecond ?? 0) / 1e9
        return (current.rate, date.addingTimeInterval(Double(minutesAhead) * 60 - intoMinute))
    }

    /// As written in the configuration (`08:00,512KiB/s 19:00,off`).
    package var description: String {
        guard entries.count > 1 || weekly else { return entries.first?.rate.map(Self.show) ?? "off" }
        return entries.map { entry in
            let day = weekly ? Self.days[entry.minute / (24 * 60)].capitalized + "-" : ""
            let minute = entry.minute % (24 * 60)
            let time = (minute / 60 < 10 ? "0" : "") + "\(minute / 60):" + (minute % 60 < 10 ? "0" : "") + "\(minute % 60)"
            return "\(day)\(time),\(entry.rate.map(Self.show) ?? "off")"
        }.joined(separator: " ")
    }

    /// A rate as the configuration writes it: `512KiB/s`.
    package static func show(_ rate: Int64) -> String {
        ByteCountText.exact(rate) + "/s"
    }
}

/// Why a `sync.bandwidth` setting cannot be read.
package struct BandwidthError: Error, Equatable {
    package var reason: String
    init(_ reason: String) { self.reason = reason }
}

/// Paces upload bodies to ``Bandwidth``, all uploads together: each slice of a body waits for its
/// turn on one schedule, so that the bytes leave at the rate, evenly (a slice is a twentieth of a
/// second's bytes at most), not in bursts. Probes, token requests and everything but upload
/// bodies never wait for it. A new setting (a reload) takes effect at the next slice.
final class BandwidthLimiter: Sendable {
    private struct State {
        var bandwidth: Bandwidth
        /// When the next slice may go: the end of the last slice reserved.
        var nextFree: TimelineInstant
        /// The rate in force and until when, worked out from the calendar when it runs out.
        var rate: Int64?
        var rateUntil: Date?
        var rateKnown = false
    }

    private let state: Mutex<State>
    private let clock: Timeline
    /// The jobs told to take an hour or more at the limit: each is told once.
    private let told = Mutex<Set<String>>([])

    init(_ bandwidth: Bandwidth, clock: Timeline) {
        self.clock = clock
        state = Mutex(State(bandwidth: bandwidth, nextFree: clock.now()))
    }

    /// The setting in force; set by a reload.
    var bandwidth: Bandwidth {
        get { state.withLock { $0.bandwidth } }
        set { state.withLock { $0.bandwidth = newValue; $0.rateKnown = false } }
    }

    /// The rate in force now (`nil`: no limit), and when the timetable changes it next.
    var current: (rate: Int64?, until: Date?) {
        let today = clock.date(of: clock.now())
        return state.withLock { state in Self.refresh(&state, at: today) }
    }

    private static func refresh(_ state: inout State, at date: Date) -> (rate: Int64?, until: Date?) {
        if !state.rateKnown || state.rateUntil.map({ date >= $0 }) == true {
            (state.rate, state.rateUntil) = state.bandwidth.rate(at: date)
            state.rateKnown = true
        }
        return (state.rate, state.rateUntil)
    }

    /// How many hours `job`'s body takes at the rate in force, when that is an hour or more and
    /// it was not told before: a limit too slow for a file is said once, when it starts.
    func hoursNeededFirstTime(_ job: OutboxFile) -> Int? {
        guard let rate = current.rate, job.size / rate >= 3600 else { return nil }
        guard told.withLock({ $0.insert(job.id.description).inserted }) else { return nil }
        return Int((Double(job.size) / Double(rate) / 3600).rounded(.up))
    }

    /// The most of a body one turn sends at `rate`: a twentieth of a second's bytes, at least
    /// 1 KiB.
    static func sliceLength(at rate: Int64) -> Int {
        Int(max(1024, min(rate / 20, 64 * 1024)))
    }

    /// Waits for the turn of `bytes` bytes; at once when there is no limit. Returns the most the
    /// next turn should take.
    @discardableResult
    func take(_ bytes: Int) async throws -> Int {
        let today = clock.date(of: clock.now())
        let (wait, slice): (TimelineInstant?, Int) = state.withLock { state in
            guard let rate = Self.refresh(&state, at: today).rate else { return (nil, 64 * 1024) }
            let now = clock.now()
            // An idle link keeps no credit beyond one slice: no burst when uploads start again.
            let credit = Duration.seconds(Double(Self.sliceLength(at: rate)) / Double(rate))
            let start = max(state.nextFree, now.advanced(by: .zero - credit))
            state.nextFree = start.advanced(by: .seconds(Double(bytes) / Double(rate)))
            return (start > now ? start : nil, Self.sliceLength(at: rate))
        }
        if let wait { try await clock.sleep(wait) }
        return slice
    }

    /// `chunks` paced: each cut into slices that wait for their turn.
    func pace<Chunks: AsyncSequence & Sendable>(_ chunks: Chunks) -> PacedChunks<Chunks> where Chunks.Element == ByteBuffer {
        PacedChunks(chunks: chunks, limiter: self)
    }
}

/// A body's chunks, each cut into slices that wait for their turn at the ``BandwidthLimiter``.
struct PacedChunks<Chunks: AsyncSequence & Sendable>: AsyncSequence, Sendable where Chunks.Element == ByteBuffer {
    typealias Element = ByteBuffer
    let chunks: Chunks
    let limiter: BandwidthLimiter

    func makeAsyncIterator() -> Iterator {
        Iterator(chunks: chunks.makeAsyncIterator(), limiter: limiter)
    }

    struct Iterator: AsyncIteratorProtocol {
        var chunks: Chunks.AsyncIterator
        let limiter: BandwidthLimiter
        var pending = ByteBuffer()
        var sliceLength = 1024

        mutating func next() async throws -> ByteBuffer? {
            try await next(isolation: nil)
        }

        mutating func next(isolation actor: isolated (any Actor)?) async throws -> ByteBuffer? {
            if pending.readableBytes == 0 {
                guard let chunk = try await chunks.next(isolation: actor) else { return nil }
                pending = chunk
            }
            let slice = pending.readSlice(length: Swift.min(sliceLength, pending.readableBytes)) ?? ByteBuffer()
            sliceLength = try await limiter.take(slice.readableBytes)
            return slice
        }
    }
}

/// One buffer as a body's only chunk, for ``BandwidthLimiter/pace(_:)``.
struct OneChunk: AsyncSequence, Sendable {
    typealias Element = ByteBuffer
    let buffer: ByteBuffer

    init(_ buffer: ByteBuffer) {
        self.buffer = buffer
    }

    func makeAsyncIterator() -> Iterator { Iterator(buffer: buffer) }

    struct Iterator: AsyncIteratorProtocol {
        var buffer: ByteBuffer?
        mutating func next() async -> ByteBuffer? {
            defer { buffer = nil }
            return buffer
        }
    }
}
