import Foundation
import Glibc
import TestSupport

/// A Varlink client written out by hand: NUL-terminated JSON messages on a Unix stream socket,
/// with blocking reads bounded by the socket's 10-second receive timeout.
final class RawVarlink {
    let socket: TestSocket
    private var received: [UInt8] = []

    init(_ path: String) throws {
        socket = try TestSocket.stream(connectedTo: path)
    }

    /// Sends bytes as they are (no terminating NUL added).
    func send(bytes: [UInt8]) throws {
        var offset = 0
        while offset < bytes.count {
            let written = bytes[offset...].withUnsafeBytes { write(socket.descriptor, $0.baseAddress, $0.count) }
            guard written > 0 else { throw TestSocketError.call("write", errno) }
            offset += written
        }
    }

    /// Sends one message: `json` and its NUL.
    func send(_ json: String) throws {
        try send(bytes: Array(json.utf8) + [0])
    }

    /// The next message, decoded; `nil` if the daemon closed the connection.
    func receive() throws -> [String: Any]? {
        var buffer = [UInt8](repeating: 0, count: 65_536)
        while true {
            if let end = received.firstIndex(of: 0) {
                let message = Array(received[..<end])
                received.removeFirst(end + 1)
                return try JSONSerialization.jsonObject(with: Data(message)) as? [String: Any]
            }
            let count = read(socket.descriptor, &buffer, buffer.count)
            if count == 0 { return nil }
            guard count > 0 else { throw TestSocketError.call("read", errno) }
            received.append(contentsOf: buffer[..<count])
        }
    }

    /// Sends a call and returns its reply.
    func call(_ json: String) throws -> [String: Any]? {
        try send(json)
        return try receive()
    }
}
