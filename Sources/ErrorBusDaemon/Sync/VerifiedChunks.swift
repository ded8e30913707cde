import Crypto
import ErrorBusStore
import NIOCore

/// A file's chunks as an upload sends them, checked to be the content its job was keyed by: the
/// bytes are hashed as they go, and the chunk that completes the file is handed on only if the
/// whole is that content. A file rewritten after it was queued (the same size, other bytes) is
/// never sent whole under the old content's key: the body ends short of its announced length,
/// the request fails, and the server keeps nothing. One part of a file sent in parts is checked
/// the same way against the part's SHA-256.
struct VerifiedChunks<Chunks: AsyncSequence & Sendable>: AsyncSequence, Sendable where Chunks.Element == ByteBuffer {
    typealias Element = ByteBuffer

    let chunks: Chunks
    let job: OutboxFile
    /// The part the chunks are, with its length and SHA-256 (hex); `nil`: the whole file.
    var part: (number: Int, length: Int64, sha256: String)? = nil

    func makeAsyncIterator() -> Iterator {
        Iterator(chunks: chunks.makeAsyncIterator(), job: job, part: part)
    }

    struct Iterator: AsyncIteratorProtocol {
        var chunks: Chunks.AsyncIterator
        let job: OutboxFile
        let part: (number: Int, length: Int64, sha256: String)?
        var hasher = SHA256()
        var read: Int64 = 0

        init(chunks: Chunks.AsyncIterator, job: OutboxFile, part: (number: Int, length: Int64, sha256: String)?) {
            self.chunks = chunks
            self.job = job
            self.part = part
        }

        var length: Int64 { part?.length ?? job.size }

        mutating func next() async throws -> ByteBuffer? {
            try await next(isolation: nil)
        }

        mutating func next(isolation actor: isolated (any Actor)?) async throws -> ByteBuffer? {
            guard let chunk = try await chunks.next(isolation: actor) else {
                guard read == length else { throw OutboxFileFailure.changed(job, size: read) }
                return nil
            }
            read += Int64(chunk.readableBytes)
            guard read <= length else { throw OutboxFileFailure.changed(job, size: read) }
            chunk.withUnsafeReadableBytes { hasher.update(bufferPointer: $0) }
            if read == length {
                let sha256 = ContentKey.hex(of: hasher.finalize())
                if let part {
                    guard sha256 == part.sha256 else { throw OutboxFileFailure.replaced(job, part: part.number) }
                } else {
                    guard sha256 == job.sha256 else { throw OutboxFileFailure.replaced(job, by: sha256) }
                }
            }
            return chunk
        }
    }
}
