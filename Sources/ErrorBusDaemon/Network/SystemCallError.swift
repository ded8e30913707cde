#if canImport(Glibc)
import Glibc
#endif

/// A system call that failed, with its `errno`.
struct SystemCallError: Error, Hashable, CustomStringConvertible {
    /// The call that failed, e.g. `socket` or `bind`.
    var call: String
    /// The `errno` it left, e.g. `EAFNOSUPPORT`.
    var errnoCode: CInt

    var description: String {
        // glibc's strerror returns static strings for known codes (a thread-local buffer for
        // unknown ones), so it is safe from any thread.
        "\(call): \(String(cString: strerror(errnoCode))) (errno \(errnoCode))"
    }
}
