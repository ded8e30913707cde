import Glibc

/// One wrapper per system call the module makes itself.
///
/// Every wrapper goes through ``check(_:_:)``, which retries `EINTR` and turns -1 into a
/// ``SystemdError`` carrying `errno` and the call's name (the shape of swift-nio's `syscall`).
enum Posix {
    /// Runs one system call, retrying it on `EINTR`, and throws if it returned -1.
    @inline(__always)
    static func check<T: FixedWidthInteger>(_ call: StaticString, _ body: () -> T) throws(SystemdError) -> T {
        while true {
            let result = body()
            if result == -1 {
                let code = errno
                if code == EINTR { continue }
                throw SystemdError.callFailed(call.description, errno: code)
            }
            return result
        }
    }

    /// `socket(2)`.
    static func socket(domain: CInt, type: CInt) throws(SystemdError) -> CInt {
        try check("socket") { Glibc.socket(domain, type, 0) }
    }

    /// `close(2)`. Not retried on `EINTR`: on Linux the descriptor is gone either way.
    static func close(_ descriptor: CInt) {
        _ = Glibc.close(descriptor)
    }

    /// `sendto(2)` of one datagram to a Unix socket address.
    static func sendto(
        _ descriptor: CInt,
        _ bytes: UnsafeRawBufferPointer,
        flags: CInt,
        to address: UnsafePointer<sockaddr_un>,
        length: socklen_t
    ) throws(SystemdError) -> Int {
        try check("sendto") {
            address.withMemoryRebound(to: sockaddr.self, capacity: 1) { address in
                Glibc.sendto(descriptor, bytes.baseAddress, bytes.count, flags, address, length)
            }
        }
    }

    /// `access(2)`.
    static func access(_ path: UnsafePointer<CChar>, _ mode: CInt) throws(SystemdError) {
        _ = try check("access") { Glibc.access(path, mode) }
    }

    /// `fstat(2)`.
    static func fstat(_ descriptor: CInt) throws(SystemdError) -> stat {
        var status = stat()
        _ = try check("fstat") { Glibc.fstat(descriptor, &status) }
        return status
    }

    /// `stat(2)` (as `fstatat(AT_FDCWD, path, …, 0)`, which Swift tells from the struct).
    static func status(ofPath path: UnsafePointer<CChar>) throws(SystemdError) -> stat {
        var status = stat()
        _ = try check("stat") { Glibc.fstatat(AT_FDCWD, path, &status, 0) }
        return status
    }

    /// `write(2)` of the whole buffer, continuing after partial writes.
    static func writeAll(_ descriptor: CInt, _ bytes: UnsafeRawBufferPointer) throws(SystemdError) {
        var remaining = bytes
        while !remaining.isEmpty {
            let written = try check("write") { Glibc.write(descriptor, remaining.baseAddress, remaining.count) }
            remaining = UnsafeRawBufferPointer(rebasing: remaining[written...])
        }
    }

    /// `clock_gettime(CLOCK_MONOTONIC)` in microseconds, the clock systemd's `MONOTONIC_USEC=` uses.
    static func monotonicMicroseconds() -> UInt64 {
        var now = timespec()
        // CLOCK_MONOTONIC with a valid pointer cannot fail.
        _ = clock_gettime(CLOCK_MONOTONIC, &now)
        return UInt64(now.tv_sec) * 1_000_000 + UInt64(now.tv_nsec) / 1_000
    }
}
