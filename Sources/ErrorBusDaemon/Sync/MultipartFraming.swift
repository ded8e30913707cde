import NIOCore

/// A file as the one part of a `multipart/form-data` body (RFC 7578): what goes before its bytes
/// and after, so that the file itself can be streamed between the two.
struct MultipartFraming: Sendable {
    let boundary: String
    let prefix: ByteBuffer
    let suffix: ByteBuffer

    /// - Parameters:
    ///   - field: the form field's name.
    ///   - fileName: the part's `filename`, with `"`, CR and LF percent-encoded as HTML forms do,
    ///     and a backslash, which some parsers take for an escape.
    init(field: String, fileName: String) {
        // Random, so that no file's content can contain it by design.
        var random = SystemRandomNumberGenerator()
        boundary = "errorbus-" + (0..<2).map { _ in String(random.next() as UInt64, radix: 16) }.joined(separator: "-")
        // By scalar: "\r\n" is one Character, which a Character-wise replacement of "\r" misses.
        var escapedName = ""
        for scalar in fileName.unicodeScalars {
            switch scalar {
            case "\"": escapedName += "%22"
            case "\\": escapedName += "%5C"
            case "\r": escapedName += "%0D"
            case "\n": escapedName += "%0A"
            default: escapedName.unicodeScalars.append(scalar)
            }
        }
        prefix = ByteBuffer(string: """
            --\(boundary)\r
            Content-Disposition: form-data; name="\(field)"; filename="\(escapedName)"\r
            Content-Type: application/octet-stream\r
            \r

            """)
        suffix = ByteBuffer(string: "\r\n--\(boundary)--\r\n")
    }

    /// The request's `Content-Type`.
    var contentType: String { "multipart/form-data; boundary=\(boundary)" }

    /// The body's length around a file of `size` bytes.
    func length(around size: Int64) -> Int64 {
        Int64(prefix.readableBytes + suffix.readableBytes) + size
    }

    /// The body around a file read whole.
    func wrap(_ file: ByteBuffer) -> ByteBuffer {
        var body = ByteBuffer()
        body.reserveCapacity(prefix.readableBytes + file.readableBytes + suffix.readableBytes)
        body.writeImmutableBuffer(prefix)
        body.writeImmutableBuffer(file)
        body.writeImmutableBuffer(suffix)
        return body
    }

    /// The body around a file read in chunks.
    func wrap<Chunks: AsyncSequence & Sendable>(_ chunks: Chunks) -> Framed<Chunks> where Chunks.Element == ByteBuffer {
        Framed(prefix: prefix, chunks: chunks, suffix: suffix)
    }

    /// The prefix, then every chunk, then the suffix.
    struct Framed<Chunks: AsyncSequence & Sendable>: AsyncSequence, Sendable where Chunks.Element == ByteBuffer {
        typealias Element = ByteBuffer

        let prefix: ByteBuffer
        let chunks: Chunks
        let suffix: ByteBuffer

        func makeAsyncIterator() -> Iterator {
            Iterator(prefix: prefix, chunks: chunks.makeAsyncIterator(), suffix: suffix)
        }

        struct Iterator: AsyncIteratorProtocol {
            var prefix: ByteBuffer?
            var chunks: Chunks.AsyncIterator
            var suffix: ByteBuffer?

            mutating func next(isolation actor: isolated (any Actor)?) async throws(Chunks.Failure) -> ByteBuffer? {
                if let first = prefix {
                    prefix = nil
                    return first
                }
                if suffix != nil, let chunk = try await chunks.next(isolation: actor) {
                    return chunk
                }
                defer { suffix = nil }
                return suffix
            }

            mutating func next() async throws -> ByteBuffer? {
                try await next(isolation: nil)
            }
        }
    }
}
