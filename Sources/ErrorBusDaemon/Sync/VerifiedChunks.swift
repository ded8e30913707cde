import Crypto
import ErrorBusStore
import NIOCore

/// A file's chunks as an upload sends them, checked to be the content its job was keyed by: the
/// bytes are hashed as they go, and the chunk that completes the file is handed on only if the
/// whole is that content. A file rewritten after it was queued (the same size, other bytes) is
/// never sent whole under the old content's key: the body ends short of its announced length,
/// the request fails, and the server keeps nothing.
struct VerifiedChunks<Chunks: AsyncSequence & Sendable>: AsyncSequence, Sendable where Chunks.Element == ByteBuffer {
    typealias Element = ByteBuffer

    let chunks: Chunks
    let job: OutboxFile

    func makeAsyncIterator() -> Iterator {
        Iterator(chunks: chunks.makeAsyncIterator(), job: job)
    }

    struct Iterator: AsyncIteratorProtocol {
        var chunks: Chunks.AsyncIterator
        let job: OutboxFile
        var hasher = SHA256()
        var read: Int64 = 0

        mutating func next() async throws -> ByteBuffer? {
            try await next(isolation: nil)
        }

        mutating func next(isolation actor: isolated (any Actor)?) async throws -> ByteBuffer? {
            guard let chunk = try await chunks.next(isolation: actor) else {
                guard read == job.size else { throw OutboxFileFailure.changed(job, size: read) }
                return nil
            }
            read += Int64(chunk.readableBytes)
            guard read <= job.size else { throw OutboxFileFailure.changed(job, size: read) }
            chunk.withUnsafeReadableBytes { hasher.update(bufferPointer: $0) }
            if read == job.size {
                let sha256 = ContentKey.hex(of: hasher.finalize())
                guard sha256 == job.sha256 else { throw OutboxFileFailure.replaced(job, by: sha256) }
            }
            return chunk
        }
    }
}
