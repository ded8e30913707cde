#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The one wrapper through which the server makes system calls on paths: a negative return
/// becomes a ``VarlinkServerError`` carrying `errno`; `EINTR` is retried.
@discardableResult
func systemCall(_ name: String, path: String, _ body: () -> CInt) throws -> CInt {
    while true {
        let result = body()
        if result >= 0 { return result }
        let error = errno
        if error == EINTR { continue }
        throw VarlinkServerError.systemCall(name, path: path, errno: error)
    }
}
