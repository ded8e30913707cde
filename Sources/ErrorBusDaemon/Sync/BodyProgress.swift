import AsyncHTTPClient
import ErrorBus
import NIOCore
import Synchronization

/// What bounds a request whose body streams: its progress, not its length.
///
/// AsyncHTTPClient asks a streamed body for its next chunk only when the connection takes more,
/// so a peer that stops reading (a server stopped or wedged, a link gone silent under an open
/// connection) stops the asking. Neither of the client's idle timeouts sees that: its write
/// timeout counts only while the connection is writable, its read timeout only once the body is
/// in the kernel's hands. The body's chunks pass through ``watching(_:)``; ``execute(_:)`` fails
/// the request with `HTTPClientError.writeTimeout` once `timeout` passes without a chunk asked
/// for, or, after the last, without the answer's head. The time the body spends producing a chunk
/// (reading the file, waiting its turn under `sync.bandwidth`) is not the peer's and never counts;
/// nor does the time before the first chunk (a connection is bounded by its connect timeout).
///
/// A body still on its way a second after its first chunk lends its run's slot
/// (``RunSlot/lend()``): a long upload is the link's or the bandwidth limit's, not the server's
/// queue, and must not keep the scope's other uploads waiting for it.
final class BodyProgress: Sendable {
    private enum Phase {
        case notStarted
        case producing
        case waiting(since: ContinuousClock.Instant)
    }

    private struct State {
        var phase = Phase.notStarted
        /// The run's slot, to lend once the body has been on its way `lendAfter`; `nil` once lent.
        var slot: RunSlot?
        /// When the first chunk was asked for.
        var firstAsked: ContinuousClock.Instant?
    }

    let timeout: Duration
    private let lendAfter: Duration
    private let state: Mutex<State>

    init(timeout: Duration, lending slot: RunSlot? = ErrorBus.currentSlot, after: Duration = .seconds(1)) {
        self.timeout = timeout
        lendAfter = after
        state = Mutex(State(slot: slot))
    }

    /// `chunks`, each asked for marking progress.
    func watching<Chunks: AsyncSequence & Sendable>(_ chunks: Chunks) -> WatchedChunks<Chunks> where Chunks.Element == ByteBuffer {
        WatchedChunks(chunks: chunks, progress: self)
    }

    /// Runs `request` (the execution of a request whose body is ``watching(_:)``), cut short with
    /// `HTTPClientError.writeTimeout` once its body stalls for `timeout`.
    func execute(_ request: @escaping @Sendable () async throws -> HTTPClientResponse) async throws -> HTTPClientResponse {
        try await withThrowingTaskGroup(of: HTTPClientResponse?.self) { group in
            group.addTask { try await request() }
            group.addTask {
                try await self.watch()
                return nil
            }
            defer { group.cancelAll() }
            while let finished = try await group.next() {
                if let response = finished { return response }
            }
            throw CancellationError()
        }
    }

    /// Returns never; throws `HTTPClientError.writeTimeout` once the body has waited `timeout`
    /// for the peer.
    private func watch() async throws {
        while true {
            let due: ContinuousClock.Instant? = state.withLock {
                if case .waiting(let since) = $0.phase { since + timeout } else { nil }
            }
            let now = ContinuousClock.now
            if let due, due <= now { throw HTTPClientError.writeTimeout }
            try await Task.sleep(until: due ?? now + timeout, clock: .continuous)
        }
    }

    fileprivate func producing() {
        let now = ContinuousClock.now
        let lend = state.withLock { state -> RunSlot? in
            state.phase = .producing
            guard let slot = state.slot else { return nil }
            guard let first = state.firstAsked else {
                state.firstAsked = now
                return nil
            }
            guard first + lendAfter <= now else { return nil }
            state.slot = nil
            return slot
        }
        lend?.lend()
    }

    fileprivate func produced() {
        state.withLock { $0.phase = .waiting(since: .now) }
    }
}

/// A body's chunks that tell a ``BodyProgress`` when each is asked for and handed over.
struct WatchedChunks<Chunks: AsyncSequence & Sendable>: AsyncSequence, Sendable where Chunks.Element == ByteBuffer {
    typealias Element = ByteBuffer
    let chunks: Chunks
    let progress: BodyProgress

    func makeAsyncIterator() -> Iterator {
        Iterator(chunks: chunks.makeAsyncIterator(), progress: progress)
    }

    struct Iterator: AsyncIteratorProtocol {
        var chunks: Chunks.AsyncIterator
        let progress: BodyProgress

        mutating func next() async throws -> ByteBuffer? {
            try await next(isolation: nil)
        }

        mutating func next(isolation actor: isolated (any Actor)?) async throws -> ByteBuffer? {
            progress.producing()
            defer { progress.produced() }
            return try await chunks.next(isolation: actor)
        }
    }
}

extension HTTPClientRequest.Body {
    /// `chunks` as a body of `length` bytes: paced by `bandwidth` when there is one, and watched
    /// by `progress`.
    static func streaming<Chunks: AsyncSequence & Sendable>(
        _ chunks: Chunks, length: Int64, bandwidth: BandwidthLimiter?, progress: BodyProgress
    ) -> Self where Chunks.Element == ByteBuffer {
        if let bandwidth {
            return .stream(progress.watching(bandwidth.pace(chunks)), length: .known(length))
        }
        return .stream(progress.watching(chunks), length: .known(length))
    }
}
