import NIOCore
import NIOPosix
import Varlink

/// A connection that sends bytes as they are and reads NUL-terminated messages as text: a
/// client that may break the protocol.
struct RawConnection {
    let channel: NIOAsyncChannel<ByteBuffer, ByteBuffer>

    static func connect(to path: String) async throws -> RawConnection {
        let channel = try await ClientBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .connect(unixDomainSocketPath: path) { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHandler(
                        ByteToMessageHandler(VarlinkFrameDecoder(maximumMessageSize: 64 << 20))
                    )
                    return try NIOAsyncChannel<ByteBuffer, ByteBuffer>(wrappingChannelSynchronously: channel)
                }
            }
        return RawConnection(channel: channel)
    }

    /// Connects, runs `body` with the connection's messages and a way to send, then closes.
    static func with<Result>(
        _ path: String,
        _ body: (_ send: (String) async throws -> Void, _ messages: inout NIOAsyncChannelInboundStream<ByteBuffer>.AsyncIterator) async throws -> Result
    ) async throws -> Result {
        let connection = try await connect(to: path)
        return try await connection.channel.executeThenClose { inbound, outbound in
            var messages = inbound.makeAsyncIterator()
            return try await body({ try await outbound.write(ByteBuffer(string: $0)) }, &messages)
        }
    }
}

extension NIOAsyncChannelInboundStream<ByteBuffer>.AsyncIterator {
    /// The next message as text, `nil` when the server has closed the connection.
    mutating func nextText() async throws -> String? {
        guard let message = try await next(isolation: #isolation) else { return nil }
        return String(buffer: message)
    }
}

/// A client that sends bytes and then never reads: NIO does not read from its socket at all.
struct SilentConnection {
    let channel: any Channel

    static func connect(to path: String) async throws -> SilentConnection {
        let channel = try await ClientBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .channelOption(.autoRead, value: false)
            .connect(unixDomainSocketPath: path)
            .get()
        return SilentConnection(channel: channel)
    }

    func send(_ text: String) async throws {
        try await channel.writeAndFlush(ByteBuffer(string: text))
    }

    func close() async {
        try? await channel.close()
    }
}
