import FoundationEssentials

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

extension VarlinkServer {
    /// Answers every call already waiting on a listening socket with `error`, then closes those
    /// connections; returns how many it answered.
    ///
    /// For a service that cannot start (a configuration it cannot use) but was started by socket
    /// activation: the client whose connection started it is told why, instead of being reset
    /// when the process exits. Each connection is also taken off the socket's queue, so that the
    /// service manager does not see the socket still readable and start the service again at
    /// once, over and over, until its start limit fails the socket unit.
    ///
    /// It blocks the calling thread: it is meant for the last moments of a process that is about
    /// to exit, or for one that waits before it can serve (called again and again meanwhile). It
    /// accepts only what is already queued (it never waits for a new connection), gives each
    /// connection `timeout` to send its call, and stops after `limit` connections, so a client
    /// that connects and sends nothing costs at most `timeout`.
    ///
    /// - Parameters:
    ///   - listeningSocket: A listening stream socket, e.g. one passed by socket activation. It is
    ///     not closed.
    ///   - error: The error every call is answered with (a `oneway` call gets no reply).
    ///   - timeout: How long each connection may take to send its call.
    ///   - limit: The most connections answered.
    public static func answerPendingCalls(
        on listeningSocket: CInt,
        with error: VarlinkError,
        timeout: Duration = .milliseconds(500),
        limit: Int = 64
    ) -> Int {
        let reply: [UInt8]
        do {
            var frame = Array(try JSONEncoder().encode(VarlinkWire.ErrorReply(error: error.name, parameters: error.parameters)))
            frame.append(0)
            reply = frame
        } catch {
            return 0
        }
        var answered = 0
        while answered < limit, PendingCall.isReadable(listeningSocket, within: .zero) {
            // The socket is readable and nothing else accepts from it, so this does not wait.
            // (Glibc's module has no accept4; the flags are set below.)
            let connection = accept(listeningSocket, nil, nil)
            guard connection >= 0 else {
                if errno == EINTR || errno == ECONNABORTED { continue }
                break
            }
            defer { close(connection) }
            _ = fcntl(connection, F_SETFD, FD_CLOEXEC)
            _ = fcntl(connection, F_SETFL, fcntl(connection, F_GETFL) | O_NONBLOCK)
            var call = PendingCall(connection: connection)
            guard call.read(within: timeout) else { continue }
            if !call.isOneway { call.write(reply, within: timeout) }
            answered += 1
        }
        return answered
    }
}

/// One connection taken off a listening socket by ``VarlinkServer/answerPendingCalls(on:with:timeout:limit:)``.
private struct PendingCall {
    let connection: CInt
    private var received: [UInt8] = []
    /// The largest call read: enough for any call of a sane client; a larger one is not waited for.
    private static let maximumCallSize = 64 * 1024

    init(connection: CInt) {
        self.connection = connection
    }

    /// Whether the call asked for no reply.
    var isOneway: Bool {
        guard let end = received.firstIndex(of: 0),
              let header = try? JSONDecoder().decode(VarlinkWire.CallHeader.self, from: Data(received[..<end]))
        else { return false }
        return header.oneway == true
    }

    /// Reads until the first call's terminating NUL; `false` if the client sent none in time.
    mutating func read(within timeout: Duration) -> Bool {
        let deadline = ContinuousClock.now + timeout
        var buffer = [UInt8](repeating: 0, count: 4096)
        while !received.contains(0), received.count < Self.maximumCallSize {
            guard Self.isReadable(connection, within: deadline - .now) else { return false }
            let count = buffer.withUnsafeMutableBytes { Glibc.read(connection, $0.baseAddress, $0.count) }
            if count < 0, errno == EINTR || errno == EAGAIN { continue }
            guard count > 0 else { return false }
            received.append(contentsOf: buffer[..<count])
        }
        return received.contains(0)
    }

    /// Writes `bytes`, giving up at the deadline (a client that does not read).
    func write(_ bytes: [UInt8], within timeout: Duration) {
        let deadline = ContinuousClock.now + timeout
        var written = 0
        while written < bytes.count {
            var ready = pollfd(fd: connection, events: Int16(POLLOUT), revents: 0)
            guard poll(&ready, 1, Self.milliseconds(deadline - .now)) > 0 else { return }
            let count = bytes[written...].withUnsafeBytes { Glibc.write(connection, $0.baseAddress, $0.count) }
            if count < 0, errno == EINTR || errno == EAGAIN { continue }
            guard count > 0 else { return }
            written += count
        }
    }

    /// Whether `descriptor` has something to read (or has hung up) within `timeout`.
    static func isReadable(_ descriptor: CInt, within timeout: Duration) -> Bool {
        var ready = pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0)
        while true {
            let result = poll(&ready, 1, milliseconds(timeout))
            if result < 0, errno == EINTR { continue }
            return result > 0
        }
    }

    private static func milliseconds(_ duration: Duration) -> CInt {
        guard duration > .zero else { return 0 }
        let (seconds, attoseconds) = duration.components
        return CInt(clamping: seconds * 1000 + attoseconds / 1_000_000_000_000_000)
    }
}
