import HTTPTypes
import Hummingbird
import NIOCore

/// A body writer that passes each buffer on in up to 16 pieces, pausing between them so the
/// whole body takes about `delay` (the `slow` fault with `trickle`).
struct TricklingBodyWriter: ResponseBodyWriter {
    private static let pieces = 16

    var parent: any ResponseBodyWriter
    let delay: Duration
    let clock: SandboxClock
    private var wroteAnything = false

    init(parent: any ResponseBodyWriter, delay: Duration, clock: SandboxClock) {
        self.parent = parent
        self.delay = delay
        self.clock = clock
    }

    @concurrent mutating func write(_ buffer: ByteBuffer) async throws {
        var buffer = buffer
        let pieces = max(1, min(Self.pieces, buffer.readableBytes))
        let pieceLength = (buffer.readableBytes + pieces - 1) / pieces
        let pause = delay / pieces
        while buffer.readableBytes > 0 {
            try await clock.sleep(for: pause)
            try await parent.write(buffer.readSlice(length: min(pieceLength, buffer.readableBytes))!)
            wroteAnything = true
        }
    }

    @concurrent consuming func finish(_ trailingHeaders: HTTPFields?) async throws {
        if !wroteAnything {
            try await clock.sleep(for: delay)
        }
        try await parent.finish(trailingHeaders)
    }
}
