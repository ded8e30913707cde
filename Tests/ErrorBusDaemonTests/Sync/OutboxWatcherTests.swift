@testable import ErrorBusDaemon
import Glibc
import NIOCore
import Testing

/// The inotify records of the outbox, as the kernel lays them out.
@Suite struct OutboxWatcherTests {
    /// One `struct inotify_event` with its NUL-padded name.
    static func event(_ mask: Int32, _ name: String) -> ByteBuffer {
        var buffer = ByteBuffer()
        let padded = (name.utf8.count / 16 + 1) * 16
        buffer.writeInteger(Int32(1), endianness: .host)
        buffer.writeInteger(UInt32(bitPattern: mask), endianness: .host)
        buffer.writeInteger(UInt32(0), endianness: .host)
        buffer.writeInteger(UInt32(padded), endianness: .host)
        buffer.writeString(name)
        buffer.writeRepeatingByte(0, count: padded - name.utf8.count)
        return buffer
    }

    @Test func renamesWritesInPlaceAndPermissionChangesAreToldApart() {
        var buffer = Self.event(IN_MOVED_TO, "renamed.bin")
        var closed = Self.event(IN_CLOSE_WRITE, "written.bin")
        var chmodded = Self.event(IN_ATTRIB, "unreadable.bin")
        buffer.writeBuffer(&closed)
        buffer.writeBuffer(&chmodded)
        #expect(OutboxWatcher.parse(buffer) == .arrived(renamed: ["renamed.bin"], written: ["written.bin"], changed: ["unreadable.bin"]))
        #expect(OutboxWatcher.parse(Self.event(IN_Q_OVERFLOW, "")) == .overflow)
    }
}
