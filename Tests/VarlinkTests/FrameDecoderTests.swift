import NIOCore
import NIOEmbedded
import Testing
@testable import Varlink

@Suite(.timeLimit(.minutes(1)))
struct FrameDecoderTests {
    private func makeChannel(maximum: Int = 16, timeout: TimeAmount? = .seconds(5)) throws -> EmbeddedChannel {
        let channel = EmbeddedChannel()
        try channel.pipeline.syncOperations.addHandler(
            ByteToMessageHandler(VarlinkFrameDecoder(maximumMessageSize: maximum, messageTimeout: timeout))
        )
        try channel.connect(to: SocketAddress(unixDomainSocketPath: "/peer")).wait()
        return channel
    }

    private func readAll(_ channel: EmbeddedChannel) throws -> [String] {
        var messages: [String] = []
        while let message = try channel.readInbound(as: ByteBuffer.self) {
            messages.append(String(buffer: message))
        }
        return messages
    }

    @Test func splitsOnNulAcrossAndWithinReads() throws {
        let channel = try makeChannel()
        try channel.writeInbound(ByteBuffer(string: "{\"a\":1}\0{\"b\""))
        #expect(try readAll(channel) == ["{\"a\":1}"])
        try channel.writeInbound(ByteBuffer(string: ":2}\0\0{}\0"))
        #expect(try readAll(channel) == ["{\"b\":2}", "", "{}"])
        _ = try channel.finish()
    }

    @Test func messageOfExactlyTheMaximumIsAccepted() throws {
        let channel = try makeChannel(maximum: 4)
        try channel.writeInbound(ByteBuffer(string: "1234\0"))
        #expect(try readAll(channel) == ["1234"])
        _ = try channel.finish()
    }

    @Test func unterminatedMessageOverTheMaximumFailsWithoutWaitingForTheRest() throws {
        let channel = try makeChannel(maximum: 4)
        try channel.writeInbound(ByteBuffer(string: "123"))
        #expect(throws: VarlinkFrameDecoder.MessageTooLarge(maximumMessageSize: 4)) {
            try channel.writeInbound(ByteBuffer(string: "45"))
        }
    }

    @Test func terminatedMessageOverTheMaximumFails() throws {
        let channel = try makeChannel(maximum: 4)
        #expect(throws: VarlinkFrameDecoder.MessageTooLarge(maximumMessageSize: 4)) {
            try channel.writeInbound(ByteBuffer(string: "12345\0"))
        }
    }

    @Test func stalledMessageClosesTheChannelAtItsDeadline() throws {
        let channel = try makeChannel()
        try channel.writeInbound(ByteBuffer(string: "{\"meth"))
        channel.embeddedEventLoop.advanceTime(by: .seconds(3))
        try channel.writeInbound(ByteBuffer(string: "od\""))
        // The deadline runs from the message's first byte, not its latest.
        channel.embeddedEventLoop.advanceTime(by: .milliseconds(1999))
        #expect(channel.isActive)
        channel.embeddedEventLoop.advanceTime(by: .milliseconds(1))
        #expect(!channel.isActive)
        #expect(throws: VarlinkFrameDecoder.MessageTimeout(timeout: .seconds(5))) { try channel.throwIfErrorCaught() }
    }

    @Test func completedMessageCancelsTheDeadline() throws {
        let channel = try makeChannel()
        try channel.writeInbound(ByteBuffer(string: "{}"))
        channel.embeddedEventLoop.advanceTime(by: .seconds(4))
        try channel.writeInbound(ByteBuffer(string: "\0"))
        #expect(try readAll(channel) == ["{}"])
        channel.embeddedEventLoop.advanceTime(by: .seconds(60))
        #expect(channel.isActive)
        // A new partial message gets a deadline of its own.
        try channel.writeInbound(ByteBuffer(string: "{"))
        channel.embeddedEventLoop.advanceTime(by: .seconds(5))
        #expect(!channel.isActive)
    }
}
