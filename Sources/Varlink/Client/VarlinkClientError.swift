#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A call could not be made or its reply not understood. (A call that the service answered with
/// an error throws ``VarlinkError`` instead.)
public struct VarlinkClientError: Error, Hashable, Sendable, CustomStringConvertible {
    /// What kind of failure it is.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        private enum Base: Hashable, Sendable {
            case connectFailed
            case connectionClosed
            case timeout
            case busy
            case protocolViolation
            case invalidReply
        }

        private let base: Base
        private init(_ base: Base) { self.base = base }

        /// The service could not be reached (no socket, nobody listening, not allowed).
        public static let connectFailed = Code(.connectFailed)
        /// The connection closed before the reply arrived.
        public static let connectionClosed = Code(.connectionClosed)
        /// The reply did not arrive in time; the connection is closed.
        public static let timeout = Code(.timeout)
        /// Another call, or an unfinished stream of replies, occupies the connection.
        public static let busy = Code(.busy)
        /// The service broke the protocol (a message that is not a reply, a stream where one reply
        /// was due, a message over the size limit); the connection is closed.
        public static let protocolViolation = Code(.protocolViolation)
        /// The reply's parameters do not match the method's declared reply type.
        public static let invalidReply = Code(.invalidReply)

        public var description: String { "\(base)" }
    }

    /// What kind of failure it is.
    public let code: Code
    /// The error number, when a system call failed (connecting).
    public let errno: Int32?
    /// What went wrong, in words.
    public let message: String

    init(_ code: Code, errno: Int32? = nil, _ message: String) {
        self.code = code
        self.errno = errno
        self.message = message
    }

    public var description: String { message }
}
