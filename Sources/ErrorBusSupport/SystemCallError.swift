#if canImport(Glibc)
import Glibc
#endif

/// A system call that failed, with its `errno`.
package struct SystemCallError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The call that failed, e.g. `socket` or `bind`.
    package var call: String
    /// The `errno` it left, e.g. `EAFNOSUPPORT`.
    package var errnoCode: CInt
    /// The file it concerned, if any.
    package var path: String?

    package init(call: String, errnoCode: CInt, path: String? = nil) {
        self.call = call
        self.errnoCode = errnoCode
        self.path = path
    }

    /// `strerror(errno)`.
    package var reason: String { String(cString: strerror(errnoCode)) }

    package var description: String {
        // glibc's strerror returns static strings for known codes (a thread-local buffer for
        // unknown ones), so it is safe from any thread.
        let subject = path.map { "\(call)(\($0))" } ?? call
        return "\(subject): \(String(cString: strerror(errnoCode))) (errno \(errnoCode))"
    }
}
