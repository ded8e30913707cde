import Crypto
import ErrorBus
import ErrorBusStore
import Foundation
import NIOCore
import Testing

@testable import ErrorBusDaemon

/// The chunks an upload sends are the content they were hashed as: a whole file against its
/// job's key, one part of a file sent in parts against the part's SHA-256.
@Suite struct VerifiedChunksTests {
    static let job = OutboxFile(id: String(repeating: "0", count: 64), service: "sync", fileName: "big.bin", path: "/outbox/big.bin", size: 1 << 20)

    static func hex(_ bytes: [UInt8]) -> String { ContentKey.hex(of: SHA256.hash(data: bytes)) }

    static func sent(_ part: [UInt8], hashedAs hashed: [UInt8]) async throws -> Int {
        let (stream, continuation) = AsyncStream.makeStream(of: ByteBuffer.self)
        for start in stride(from: 0, to: part.count, by: 4) { continuation.yield(ByteBuffer(bytes: part[start..<min(part.count, start + 4)])) }
        continuation.finish()
        let chunks = VerifiedChunks(
            chunks: stream,
            job: job,
            part: (3, Int64(hashed.count), hex(hashed))
        )
        var count = 0
        for try await chunk in chunks { count += chunk.readableBytes }
        return count
    }

    @Test func aPartIsSentWhenItIsWhatWasHashed() async throws {
        let part = Array("the third part of big.bin".utf8)
        #expect(try await Self.sent(part, hashedAs: part) == part.count)
    }

    @Test func aPartChangedSinceItWasHashedIsCutShort() async throws {
        let hashed = Array("the third part of big.bin".utf8)
        var changed = hashed
        changed[5] = UInt8(ascii: "X")
        await #expect {
            _ = try await Self.sent(changed, hashedAs: hashed)
        } throws: { error in
            (error as? JobStopped)?.reason == .superseded && (error as? JobStopped)?.failure?.text.message.contains("part 3") == true
        }
        // Longer than hashed: the file grew under the part.
        await #expect(throws: OutboxFileFailure.self) { _ = try await Self.sent(hashed + [1], hashedAs: hashed) }
    }
}
