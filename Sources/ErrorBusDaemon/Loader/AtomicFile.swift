import ErrorBusSupport
#if canImport(Glibc)
import Glibc
#endif
import _NIOFileSystem
import NIOCore

/// Replaces a file so that a crash at any moment leaves either the old copy or the new one.
enum AtomicFile {
    /// Why a replacement was abandoned; the old copy is untouched.
    struct TooLarge: Error, Sendable {
        let limit: Int64
    }

    /// Writes `chunks` to a temporary file beside `path`, flushes it to disk, renames it over
    /// `path` and flushes the directory.
    ///
    /// - Returns: The number of bytes written.
    /// - Throws: ``TooLarge`` when the content exceeds `limit` bytes; any I/O error. In every
    ///   case the temporary file is removed and `path` keeps its previous content.
    @discardableResult
    static func replace<Chunks: AsyncSequence & Sendable>(
        _ path: String,
        with chunks: Chunks,
        limit: Int64
    ) async throws -> Int64 where Chunks.Element == ByteBuffer {
        let directory = String(path[..<(path.lastIndex(of: "/") ?? path.startIndex)])
        let name = path[path.index(after: path.lastIndex(of: "/") ?? path.startIndex)...]
        let temporary = "\(directory)/.\(name).\(UInt32.random(in: 0...UInt32.max)).tmp"
        do {
            let written = try await FileSystem.shared.withFileHandle(
                forWritingAt: FilePath(temporary),
                options: .newFile(replaceExisting: false)
            ) { handle in
                var offset: Int64 = 0
                for try await chunk in chunks {
                    guard offset + Int64(chunk.readableBytes) <= limit else { throw TooLarge(limit: limit) }
                    try await handle.write(contentsOf: chunk, toAbsoluteOffset: offset)
                    offset += Int64(chunk.readableBytes)
                }
                try await handle.synchronize()
                return offset
            }
            try SystemCall.rename(temporary, to: path)
            try synchronizeDirectory(directory)
            return written
        } catch {
            try? SystemCall.unlink(temporary)
            throw error
        }
    }

    /// Flushes a directory's entries (a rename is only durable once its directory is).
    static func synchronizeDirectory(_ directory: String) throws {
        let descriptor = try SystemCall.open(directory, flags: O_RDONLY | O_DIRECTORY)
        defer { try? SystemCall.close(descriptor) }
        try SystemCall.fsync(descriptor, path: directory)
    }
}
