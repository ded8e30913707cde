import CNetlink
import NIOCore

/// Reading the notifications in one netlink datagram.
enum NetlinkMessages {
    /// Counts the `nlmsghdr`-framed messages in `datagram` by kind.
    ///
    /// A datagram holds one or more messages, each starting with a `nlmsghdr` whose `nlmsg_len`
    /// covers header and payload, padded to 4 bytes (netlink(7)). Parsing stops at the first
    /// malformed header; a datagram with nothing parseable still counts as one change, so a
    /// message this code does not understand never goes unnoticed.
    static func summarize(_ datagram: ByteBuffer) -> NetworkChange {
        var change = NetworkChange()
        let headerLength = Int(errorbus_nlmsg_hdrlen())
        let lengthOffset = MemoryLayout<nlmsghdr>.offset(of: \.nlmsg_len)!
        let typeOffset = MemoryLayout<nlmsghdr>.offset(of: \.nlmsg_type)!
        var offset = datagram.readerIndex
        let end = datagram.writerIndex
        while end - offset >= headerLength {
            guard let length = datagram.getInteger(at: offset + lengthOffset, endianness: .host, as: UInt32.self),
                let type = datagram.getInteger(at: offset + typeOffset, endianness: .host, as: UInt16.self),
                Int(length) >= headerLength, Int(length) <= end - offset
            else { break }
            switch CInt(type) {
            case CInt(RTM_NEWLINK), CInt(RTM_DELLINK): change.links += 1
            case CInt(RTM_NEWADDR), CInt(RTM_DELADDR): change.addresses += 1
            case CInt(RTM_NEWROUTE), CInt(RTM_DELROUTE): change.routes += 1
            default: change.other += 1
            }
            offset += Int(errorbus_nlmsg_align(length))
        }
        if change.notifications == 0 { change.other = 1 }
        return change
    }
}
