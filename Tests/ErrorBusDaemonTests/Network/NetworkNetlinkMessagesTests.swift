import CNetlink
import NIOCore
import Testing

@testable import ErrorBusDaemon

/// Counting the notifications in a netlink datagram.
@Suite(.timeLimit(.minutes(1)))
struct NetworkNetlinkMessagesTests {
    /// A datagram of `nlmsghdr`s of `types`, each with `payload` bytes, padded as the kernel pads.
    static func datagram(_ types: [CInt], payload: Int = 5) -> ByteBuffer {
        var buffer = ByteBuffer()
        for type in types {
            let length = UInt32(MemoryLayout<nlmsghdr>.size + payload)
            buffer.writeInteger(length, endianness: .host)
            buffer.writeInteger(UInt16(type), endianness: .host)
            buffer.writeInteger(UInt16(0), endianness: .host)  // flags
            buffer.writeInteger(UInt32(0), endianness: .host)  // seq
            buffer.writeInteger(UInt32(0), endianness: .host)  // port id
            buffer.writeRepeatingByte(0, count: Int(errorbus_nlmsg_align(length)) - MemoryLayout<nlmsghdr>.size)
        }
        return buffer
    }

    @Test func countsEachMessageByKind() {
        let change = NetlinkMessages.summarize(
            Self.datagram([CInt(RTM_NEWLINK), CInt(RTM_NEWADDR), CInt(RTM_DELADDR), CInt(RTM_NEWROUTE), CInt(RTM_NEWNEIGH)])
        )
        #expect(change == NetworkChange(links: 1, addresses: 2, routes: 1, other: 1))
    }

    @Test func aTruncatedOrMalformedDatagramStillCountsAsAChange() {
        var truncated = Self.datagram([CInt(RTM_NEWROUTE), CInt(RTM_NEWROUTE)])
        truncated.moveWriterIndex(to: truncated.writerIndex - 4)
        #expect(NetlinkMessages.summarize(truncated) == NetworkChange(routes: 1))
        #expect(NetlinkMessages.summarize(ByteBuffer(bytes: [1, 2, 3])) == NetworkChange(other: 1))
        var zeroLength = ByteBuffer()
        zeroLength.writeRepeatingByte(0, count: 16)
        #expect(NetlinkMessages.summarize(zeroLength) == NetworkChange(other: 1))
    }
}
