import Foundation
import Glibc

/// A directory under /tmp for one test's sockets, removed when the value goes away.
public final class TemporaryDirectory: Sendable {
    public let path: String

    public init() throws {
        var template = Array("/tmp/errorbus-systemd-XXXXXX".utf8CString)
        guard let created = mkdtemp(&template) else { throw TestSocketError.call("mkdtemp", errno) }
        self.path = String(cString: created)
    }

    deinit {
        try? FileManager.default.removeItem(atPath: self.path)
    }
}

public struct TestSocketError: Error, CustomStringConvertible {
    public var description: String

    public init(description: String) { self.description = description }

    public static func call(_ name: String, _ code: CInt) -> TestSocketError {
        TestSocketError(description: "\(name): \(String(cString: strerror(code))) (errno \(code))")
    }
}

/// An `AF_UNIX` socket a test owns: a datagram socket standing in for `$NOTIFY_SOCKET`, or a
/// stream connection to a socket-activated service.
public final class TestSocket: Sendable {
    public let descriptor: CInt
    public let path: String

    private init(descriptor: CInt, path: String) {
        self.descriptor = descriptor
        self.path = path
    }

    deinit {
        close(self.descriptor)
    }

    /// A datagram socket bound to `path` (`@name` for the abstract namespace).
    public static func datagram(boundTo path: String) throws -> TestSocket {
        let descriptor = socket(AF_UNIX, CInt(SOCK_DGRAM.rawValue) | CInt(SOCK_CLOEXEC.rawValue), 0)
        guard descriptor >= 0 else { throw TestSocketError.call("socket", errno) }
        let socket = TestSocket(descriptor: descriptor, path: path)
        let result = Self.withAddress(path) { bind(descriptor, $0, $1) }
        guard result == 0 else { throw TestSocketError.call("bind", errno) }
        return socket
    }

    /// An unbound datagram socket connected to `path`.
    public static func datagram(connectedTo path: String) throws -> TestSocket {
        let descriptor = socket(AF_UNIX, CInt(SOCK_DGRAM.rawValue) | CInt(SOCK_CLOEXEC.rawValue), 0)
        guard descriptor >= 0 else { throw TestSocketError.call("socket", errno) }
        let socket = TestSocket(descriptor: descriptor, path: path)
        let result = Self.withAddress(path) { connect(descriptor, $0, $1) }
        guard result == 0 else { throw TestSocketError.call("connect", errno) }
        return socket
    }

    /// A stream connection to the socket at `path`, with a 10-second receive timeout.
    public static func stream(connectedTo path: String) throws -> TestSocket {
        let descriptor = socket(AF_UNIX, CInt(SOCK_STREAM.rawValue) | CInt(SOCK_CLOEXEC.rawValue), 0)
        guard descriptor >= 0 else { throw TestSocketError.call("socket", errno) }
        let socket = TestSocket(descriptor: descriptor, path: path)
        var timeout = timeval(tv_sec: 10, tv_usec: 0)
        setsockopt(descriptor, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        let result = Self.withAddress(path) { connect(descriptor, $0, $1) }
        guard result == 0 else { throw TestSocketError.call("connect", errno) }
        return socket
    }

    /// Every datagram already queued, without waiting for more.
    public func receiveQueued() throws -> [String] {
        var datagrams: [String] = []
        var buffer = [UInt8](repeating: 0, count: 65_536)
        while true {
            let count = recv(self.descriptor, &buffer, buffer.count, CInt(MSG_DONTWAIT))
            if count < 0 {
                if errno == EAGAIN || errno == EWOULDBLOCK { return datagrams }
                throw TestSocketError.call("recv", errno)
            }
            datagrams.append(String(decoding: buffer[..<count], as: UTF8.self))
        }
    }

    /// Waits (at most the socket's receive timeout) for one datagram.
    public func receive(timeout seconds: Int) throws -> String {
        var timeout = timeval(tv_sec: seconds, tv_usec: 0)
        setsockopt(self.descriptor, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        var buffer = [UInt8](repeating: 0, count: 65_536)
        let count = recv(self.descriptor, &buffer, buffer.count, 0)
        guard count >= 0 else { throw TestSocketError.call("recv", errno) }
        return String(decoding: buffer[..<count], as: UTF8.self)
    }

    /// ``receive(timeout:)``, off Swift's cooperative pool (``offThePool(_:)``).
    public func received(timeout seconds: Int) async throws -> String {
        try await offThePool { try self.receive(timeout: seconds) }
    }

    /// Reads the stream until the other side closes it.
    public func readToEnd() throws -> String {
        var received: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        while true {
            let count = read(self.descriptor, &buffer, buffer.count)
            if count < 0 { throw TestSocketError.call("read", errno) }
            if count == 0 { return String(decoding: received, as: UTF8.self) }
            received.append(contentsOf: buffer[..<count])
        }
    }

    private static func withAddress(_ path: String, _ body: (UnsafePointer<sockaddr>, socklen_t) -> CInt) -> CInt {
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        var bytes = Array(path.utf8)
        let abstract = bytes.first == UInt8(ascii: "@")
        if abstract { bytes[0] = 0 }
        withUnsafeMutableBytes(of: &address.sun_path) { $0.copyBytes(from: bytes) }
        let length = MemoryLayout<sockaddr_un>.offset(of: \.sun_path)! + bytes.count + (abstract ? 0 : 1)
        return withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { body($0, socklen_t(length)) }
        }
    }
}

/// Runs a blocking call (a `recv`, a `read` that waits for a peer) on a thread of its own: a test
/// that blocks one of the few threads of Swift's cooperative pool (two on a 2-core machine) can
/// keep the code under test from running, and so from ever answering it.
public func offThePool<Result: Sendable>(_ body: @escaping @Sendable () throws -> Result) async throws -> Result {
    try await withCheckedThrowingContinuation { continuation in
        Thread { continuation.resume(with: Swift.Result { try body() }) }.start()
    }
}
