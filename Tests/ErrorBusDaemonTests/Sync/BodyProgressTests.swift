import AsyncHTTPClient
import NIOCore
import NIOHTTP1
import Synchronization
import Testing

@testable import ErrorBusDaemon

/// A streamed body is bounded by its progress: a request whose connection stops asking for chunks
/// is cut at the timeout; a body slow to produce its chunks, or a request slow to start, is not.
/// The requests here are closures that consume the body as AsyncHTTPClient would.
@Suite struct BodyProgressTests {
    /// Chunks of one byte, each produced after `delay`.
    struct Chunks: AsyncSequence, Sendable {
        typealias Element = ByteBuffer
        let count: Int
        var delay: Duration = .zero

        func makeAsyncIterator() -> Iterator { Iterator(left: count, delay: delay) }

        struct Iterator: AsyncIteratorProtocol {
            var left: Int
            let delay: Duration
            mutating func next() async throws -> ByteBuffer? {
                guard left > 0 else { return nil }
                left -= 1
                // The producer's own slowness (a file read, the bandwidth limit), not a wait for an event.
                if delay > .zero { try await Task.sleep(for: delay) }
                return ByteBuffer(bytes: [1])
            }
        }
    }

    static func drain<S: AsyncSequence>(_ chunks: S) async throws -> Int where S.Element == ByteBuffer {
        var count = 0
        for try await chunk in chunks { count += chunk.readableBytes }
        return count
    }

    @Test func aBodyTheConnectionStopsAskingForIsCutAtTheTimeout() async throws {
        let progress = BodyProgress(timeout: .milliseconds(100))
        let chunks = progress.watching(Chunks(count: 10))
        let cancelled = Flag()
        await #expect(throws: HTTPClientError.writeTimeout) {
            _ = try await progress.execute {
                var iterator = chunks.makeAsyncIterator()
                _ = try await iterator.next()
                _ = try await iterator.next()
                // The peer stops reading: nothing asks for the third chunk until cancelled.
                await withTaskCancellationHandler {
                    await AsyncStream<Never> { _ in }.first { _ in true }
                } onCancel: {
                    cancelled.set()
                }
                throw CancellationError()
            }
        }
        #expect(cancelled.isSet, "the request was not cancelled")
    }

    @Test func aBodyThatIsSentAndNotAnsweredIsCutAtTheTimeout() async throws {
        let progress = BodyProgress(timeout: .milliseconds(100))
        let chunks = progress.watching(Chunks(count: 3))
        await #expect(throws: HTTPClientError.writeTimeout) {
            _ = try await progress.execute {
                let sent = try await Self.drain(chunks)
            #expect(sent == 3)
                // Sent whole; no answer comes.
                try await Task.sleep(for: .seconds(3600))
                return HTTPClientResponse(status: .ok)
            }
        }
    }

    @Test func aBodySlowToProduceItsChunksIsNotAStall() async throws {
        let progress = BodyProgress(timeout: .milliseconds(50))
        let chunks = progress.watching(Chunks(count: 4, delay: .milliseconds(200)))
        let response = try await progress.execute {
            let sent = try await Self.drain(chunks)
            #expect(sent == 4)
            return HTTPClientResponse(status: .created)
        }
        #expect(response.status == .created)
    }

    @Test func theTimeBeforeTheFirstChunkIsNotAStall() async throws {
        let progress = BodyProgress(timeout: .milliseconds(50))
        let chunks = progress.watching(Chunks(count: 2))
        let response = try await progress.execute {
            // A connection being made: bounded by the connect timeout, not this one.
            try await Task.sleep(for: .milliseconds(300))
            let sent = try await Self.drain(chunks)
            #expect(sent == 2)
            return HTTPClientResponse(status: .ok)
        }
        #expect(response.status == .ok)
    }
}

/// Set once, read after.
private final class Flag: Sendable {
    private let value = Mutex(false)
    func set() { value.withLock { $0 = true } }
    var isSet: Bool { value.withLock { $0 } }
}
