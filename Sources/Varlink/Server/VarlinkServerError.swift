#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Why a ``VarlinkServer`` could not start listening.
public struct VarlinkServerError: Error, Hashable, Sendable, CustomStringConvertible {
    private enum Code: Hashable, Sendable {
        case addressInUse
        case notASocket
        case systemCall
    }

    private let code: Code
    /// The error number of a failed system call, `nil` for other errors.
    public let errno: Int32?
    /// What went wrong, in words.
    public let message: String

    private init(_ code: Code, errno: Int32? = nil, _ message: String) {
        self.code = code
        self.errno = errno
        self.message = message
    }

    public var description: String { message }

    /// Another server is listening on the socket path.
    static func addressInUse(_ path: String) -> Self {
        Self(.addressInUse, "another server is listening on \(path)")
    }

    /// The socket path exists and is not a socket: it is not removed.
    static func notASocket(_ path: String) -> Self {
        Self(.notASocket, "\(path) exists and is not a socket; not removing it")
    }

    /// A system call failed.
    static func systemCall(_ name: String, path: String, errno: Int32) -> Self {
        Self(.systemCall, errno: errno, "\(name)(\(path)) failed: \(String(cString: strerror(errno))) (errno \(errno))")
    }
}
