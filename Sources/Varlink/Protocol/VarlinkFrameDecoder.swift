public import NIOCore

/// Splits a byte stream into Varlink messages: each one is a JSON text terminated by a NUL byte.
///
/// A message longer than `maximumMessageSize` (not counting its NUL) is an error: the decoder
/// throws ``VarlinkFrameDecoder/MessageTooLarge`` as soon as that many bytes have arrived without
/// a NUL, so a peer cannot make it buffer more. When `messageTimeout` is set, a message that has
/// begun to arrive must be complete within it, or the decoder fires
/// ``VarlinkFrameDecoder/MessageTimeout`` and closes the channel: a peer that sends half a
/// message and then nothing is disconnected.
public struct VarlinkFrameDecoder: ByteToMessageDecoder {
    public typealias InboundOut = ByteBuffer

    /// A message exceeded the maximum size.
    public struct MessageTooLarge: Error, Hashable, Sendable {
        /// The maximum size, in bytes.
        public let maximumMessageSize: Int
    }

    /// A message began to arrive but was not complete in time.
    public struct MessageTimeout: Error, Hashable, Sendable {
        /// The time allowed for a message to arrive completely.
        public let timeout: TimeAmount
    }

    private let maximumMessageSize: Int
    private let messageTimeout: TimeAmount?
    /// How many readable bytes are already known to contain no NUL.
    private var scanned = 0
    /// Closes the channel if the message that has begun does not complete in time.
    private var deadline: Scheduled<Void>?

    /// Creates a decoder.
    ///
    /// - Parameters:
    ///   - maximumMessageSize: The longest message accepted, in bytes, without its NUL.
    ///   - messageTimeout: The time a message may take to arrive once it has begun, or `nil` for
    ///     no limit.
    public init(maximumMessageSize: Int, messageTimeout: TimeAmount? = nil) {
        precondition(maximumMessageSize > 0, "maximumMessageSize must be positive")
        self.maximumMessageSize = maximumMessageSize
        self.messageTimeout = messageTimeout
    }

    public mutating func decode(context: ChannelHandlerContext, buffer: inout ByteBuffer) throws -> DecodingState {
        let bytes = buffer.readableBytesView
        let searchStart = bytes.index(bytes.startIndex, offsetBy: scanned)
        guard let terminator = bytes[searchStart...].firstIndex(of: 0) else {
            scanned = bytes.count
            guard scanned <= maximumMessageSize else {
                cancelDeadline()
                throw MessageTooLarge(maximumMessageSize: maximumMessageSize)
            }
            if scanned > 0 { startDeadline(context: context) }
            return .needMoreData
        }
        let length = bytes.distance(from: bytes.startIndex, to: terminator)
        guard length <= maximumMessageSize else {
            cancelDeadline()
            throw MessageTooLarge(maximumMessageSize: maximumMessageSize)
        }
        // The slice shares the buffer's storage: no copy.
        let message = buffer.readSlice(length: length)!
        buffer.moveReaderIndex(forwardBy: 1)
        scanned = 0
        cancelDeadline()
        context.fireChannelRead(Self.wrapInboundOut(message))
        return .continue
    }

    public mutating func decodeLast(
        context: ChannelHandlerContext,
        buffer: inout ByteBuffer,
        seenEOF: Bool
    ) throws -> DecodingState {
        while try decode(context: context, buffer: &buffer) == .continue {}
        // A partial message at the end of the stream is dropped: its sender has gone.
        cancelDeadline()
        return .needMoreData
    }

    public mutating func decoderRemoved(context: ChannelHandlerContext) {
        cancelDeadline()
    }

    private mutating func startDeadline(context: ChannelHandlerContext) {
        guard deadline == nil, let messageTimeout else { return }
        let timeout = messageTimeout
        deadline = context.eventLoop.assumeIsolated().scheduleTask(in: messageTimeout) {
            context.fireErrorCaught(MessageTimeout(timeout: timeout))
            context.close(promise: nil)
        }
    }

    private mutating func cancelDeadline() {
        deadline?.cancel()
        deadline = nil
    }
}
