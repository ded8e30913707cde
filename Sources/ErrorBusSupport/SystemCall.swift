#if canImport(Glibc)
import Glibc
#endif

/// The one place the daemon calls the kernel through (in the shape of
/// swift-nio's `syscall` in `NIOPosix/System.swift`): `-1` becomes a ``SystemCallError`` with
/// `errno` and the call's name, and `EINTR` is retried.
package enum SystemCall {
    /// Runs one system call; throws if it returned -1.
    ///
    /// `errno` is read right after `body` returns, before anything else can run on this thread;
    /// keep `body` to the call itself.
    ///
    /// - Parameter retryingInterrupted: retry on `EINTR` (default). `close` must not be retried
    ///   on Linux: the descriptor is gone whatever it returned.
    /// - Parameter path: The file the call concerns, for the error's message.
    @inline(never)
    @discardableResult
    package static func check<T: FixedWidthInteger>(
        _ call: StaticString,
        path: String? = nil,
        retryingInterrupted: Bool = true,
        _ body: () -> T
    ) throws(SystemCallError) -> T {
        while true {
            let result = body()
            guard result == -1 else { return result }
            let code = errno
            if code == EINTR && retryingInterrupted { continue }
            throw SystemCallError(call: call.description, errnoCode: code, path: path)
        }
    }

    /// `close(descriptor)`, once, whatever it answers (`EINTR` included: on Linux the
    /// descriptor is released either way).
    package static func close(_ descriptor: CInt) throws(SystemCallError) {
        _ = try check("close", retryingInterrupted: false) { Glibc.close(descriptor) }
    }
}
