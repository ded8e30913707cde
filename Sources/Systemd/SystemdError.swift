import Glibc

/// An error from libsystemd, or from a system call the Systemd module made itself.
///
/// libsystemd reports failure as a negative errno (`-ENOENT`); system calls return -1 and set
/// `errno`. Both end up here, with the errno and the name of the C function that failed, so a log
/// line can say `sd_notify: No such file or directory (errno 2)` instead of "an error occurred".
public struct SystemdError: Error, Hashable, Sendable {
    /// What kind of failure this is.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        private enum _Code: Hashable, Sendable {
            case callFailed
            case invalidArgument
        }

        private var code: _Code

        private init(code: _Code) {
            self.code = code
        }

        public var description: String {
            switch self.code {
            case .callFailed: "call failed"
            case .invalidArgument: "invalid argument"
            }
        }

        /// A C function returned an error: ``SystemdError/errnoCode`` and ``SystemdError/call``
        /// say which error and which function.
        public static let callFailed = Code(code: .callFailed)
        /// An argument was rejected before any C function was called, for example a socket path
        /// too long for `sockaddr_un`. ``SystemdError/call`` names the operation.
        public static let invalidArgument = Code(code: .invalidArgument)
    }

    /// What kind of failure this is.
    public let code: Code
    /// The errno value, positive (`ENOENT`, not `-ENOENT`).
    public let errnoCode: CInt
    /// The C function (or, for ``Code/invalidArgument``, the operation) that failed.
    public let call: String

    /// Creates the error for a C function that failed with `errnoCode`.
    static func callFailed(_ call: String, errno errnoCode: CInt) -> SystemdError {
        SystemdError(code: .callFailed, errnoCode: errnoCode, call: call)
    }

    /// Creates the error for an argument rejected before any C function was called.
    static func invalidArgument(_ operation: String, errno errnoCode: CInt = EINVAL) -> SystemdError {
        SystemdError(code: .invalidArgument, errnoCode: errnoCode, call: operation)
    }

    private init(code: Code, errnoCode: CInt, call: String) {
        self.code = code
        self.errnoCode = errnoCode
        self.call = call
    }
}

extension SystemdError: CustomStringConvertible {
    public var description: String {
        // glibc's strerror returns static strings for known codes and a thread-local buffer for
        // unknown ones, so it is safe to call from any thread.
        let reason = String(cString: strerror(self.errnoCode))
        switch self.code {
        case .invalidArgument: return "\(self.call): invalid argument: \(reason) (errno \(self.errnoCode))"
        default: return "\(self.call): \(reason) (errno \(self.errnoCode))"
        }
    }
}
