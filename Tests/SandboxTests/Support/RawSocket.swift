#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A bare blocking TCP exchange, to see exactly how the server ended the connection (an HTTP
/// client reports a reset and a clean close alike).
enum RawSocket {
    /// How the first read after sending ended.
    enum Ending: Equatable {
        /// ECONNRESET: the peer sent RST.
        case reset
        /// End of file: the peer sent FIN.
        case closed
        /// Bytes arrived.
        case data(String)
    }

    struct Failure: Error, CustomStringConvertible {
        let call: String
        let errno: Int32
        var description: String { "\(call) failed: errno \(errno)" }
    }

    /// Connects to 127.0.0.1:`port`, sends `request`, and reads once (10 s at most).
    static func exchange(port: Int, request: String) throws -> Ending {
        #if canImport(Glibc)
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        #else
        let fd = socket(AF_INET, SOCK_STREAM, 0)
        #endif
        guard fd >= 0 else { throw Failure(call: "socket", errno: errno) }
        defer { close(fd) }

        var timeout = timeval(tv_sec: 10, tv_usec: 0)
        _ = setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))

        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        guard connected == 0 else { throw Failure(call: "connect", errno: errno) }

        let bytes = Array(request.utf8)
        var sent = 0
        while sent < bytes.count {
            let n = bytes[sent...].withUnsafeBytes { send(fd, $0.baseAddress, $0.count, 0) }
            guard n > 0 else { throw Failure(call: "send", errno: errno) }
            sent += n
        }

        var buffer = [UInt8](repeating: 0, count: 4096)
        let n = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
        if n < 0 {
            if errno == ECONNRESET { return .reset }
            throw Failure(call: "recv", errno: errno)
        }
        return n == 0 ? .closed : .data(String(decoding: buffer[..<n], as: UTF8.self))
    }
}
