import Dispatch
import Foundation
import Glibc
import Synchronization
import TestSupport

/// A Varlink client written out by hand: NUL-terminated JSON messages on a Unix stream socket.
///
/// Its reads block (at most the socket's 10-second receive timeout), so they run on a Dispatch
/// thread, never on the tests' cooperative pool: a blocked pool thread could keep the test from
/// draining errorbusd's output, and errorbusd from answering.
final class RawVarlink: Sendable {
    /// A decoded message.
    struct Message: @unchecked Sendable {
        // Immutable after decoding; JSONSerialization's objects are only read.
        let object: [String: Any]
        subscript(key: String) -> Any? { object[key] }
    }

    let socket: TestSocket
    /// Bytes read past the last message.
    private let received = Mutex<[UInt8]>([])

    init(_ path: String) throws {
        socket = try TestSocket.stream(connectedTo: path)
    }

    /// Sends bytes as they are (no terminating NUL added).
    func send(bytes: [UInt8]) async throws {
        try await Self.blocking { [socket] in
            guard Self.write(bytes, to: socket.descriptor) else { throw TestSocketError.call("send", errno) }
        }
    }

    /// Writes `bytes` until done or the peer is gone (`MSG_NOSIGNAL`: a daemon that closes a
    /// misbehaving connection must not kill the test with SIGPIPE); whether all went out.
    @discardableResult
    static func write(_ bytes: [UInt8], to descriptor: CInt) -> Bool {
        var offset = 0
        while offset < bytes.count {
            let sent = bytes[offset...].withUnsafeBytes { Glibc.send(descriptor, $0.baseAddress, $0.count, CInt(MSG_NOSIGNAL)) }
            guard sent > 0 else { return false }
            offset += sent
        }
        return true
    }

    /// Sends one message: `json` and its NUL.
    func send(_ json: String) async throws {
        try await send(bytes: Array(json.utf8) + [0])
    }

    /// The next message, decoded; `nil` if errorbusd closed the connection. A close that left
    /// some of what was sent unread (a message refused for its size) reaches a Unix socket as
    /// `ECONNRESET` after the messages sent before it, rather than as the end of the stream:
    /// that too is `nil`.
    func receive() async throws -> Message? {
        try await Self.blocking { [self] in try receiveBlocking() }
    }

    /// Sends a call and returns its reply.
    func call(_ json: String) async throws -> Message? {
        try await send(json)
        return try await receive()
    }

    private func receiveBlocking() throws -> Message? {
        var buffer = [UInt8](repeating: 0, count: 65_536)
        while true {
            let message: [UInt8]? = received.withLock { received in
                guard let end = received.firstIndex(of: 0) else { return nil }
                defer { received.removeFirst(end + 1) }
                return Array(received[..<end])
            }
            if let message {
                return try (JSONSerialization.jsonObject(with: Data(message)) as? [String: Any]).map(Message.init)
            }
            let count = read(socket.descriptor, &buffer, buffer.count)
            if count == 0 || (count < 0 && errno == ECONNRESET) { return nil }
            guard count > 0 else { throw TestSocketError.call("read", errno) }
            received.withLock { $0.append(contentsOf: buffer[..<count]) }
        }
    }

    /// Runs blocking socket work off the tests' cooperative pool (``offThePool(_:)``).
    static func blocking<Result: Sendable>(_ body: @escaping @Sendable () throws -> Result) async throws -> Result {
        try await offThePool(body)
    }
}
