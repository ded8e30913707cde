import Glibc
import TestSupport

/// A loopback port nothing listens on.
enum ClosedPort {
    /// Binds an ephemeral port, then closes it: connecting to it is refused until something else
    /// happens to bind it, which on a test machine's loopback is unlikely within the test.
    static func find() throws -> Int {
        let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard descriptor >= 0 else { throw ChildProcessError(description: "socket: errno \(errno)") }
        defer { close(descriptor) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = 0
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { pointer in
                bind(descriptor, pointer, length) == 0 && getsockname(descriptor, pointer, &length) == 0
            }
        }
        guard bound else { throw ChildProcessError(description: "bind: errno \(errno)") }
        return Int(UInt16(bigEndian: address.sin_port))
    }
}
