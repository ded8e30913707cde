#if canImport(FoundationEssentials)
import FoundationEssentials

#if canImport(Glibc)
import Glibc
private let systemWrite = Glibc.write
#elseif canImport(Musl)
import Musl
private let systemWrite = Musl.write
#endif

/// Standard error, as `FileHandle.standardError.write(_:)` writes to it.
///
/// errorbusctl uses FoundationEssentials, not Foundation: Foundation's `FileHandle` alone would
/// link all of Foundation into the binary, with FoundationInternationalization and ICU's data
/// (38 of the 64 MB it loaded). This stands in for the one use errorbusctl makes of it.
enum FileHandle {
    static let standardError = StandardError()

    struct StandardError: Sendable {
        /// Writes all of `data` (unbuffered, as Foundation's `FileHandle` does).
        func write(_ data: Data) {
            data.withUnsafeBytes { bytes in
                var offset = 0
                while offset < bytes.count {
                    let written = systemWrite(STDERR_FILENO, bytes.baseAddress! + offset, bytes.count - offset)
                    if written < 0, errno == EINTR { continue }
                    guard written > 0 else { return }
                    offset += written
                }
            }
        }
    }
}
#endif
