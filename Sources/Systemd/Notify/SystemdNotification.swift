/// One state change a service reports to its service manager with `sd_notify`.
///
/// Each notification is one or more `NAME=value` lines of the notify protocol; a
/// ``SystemdNotifier`` joins the notifications of one call with newlines into one datagram.
/// See `sd_notify(3)` for what systemd does with each of them.
public struct SystemdNotification: Sendable, Hashable, CustomStringConvertible {
    /// The protocol text, one assignment per line, without a trailing newline.
    public let assignments: String

    private init(_ assignments: String) {
        self.assignments = assignments
    }

    public var description: String { self.assignments }

    /// `READY=1`: start-up (or a reload) is complete and the service is serving.
    public static let ready = SystemdNotification("READY=1")

    /// `STOPPING=1`: the service is shutting down.
    public static let stopping = SystemdNotification("STOPPING=1")

    /// `WATCHDOG=1`: keep-alive for `WatchdogSec=`.
    public static let watchdog = SystemdNotification("WATCHDOG=1")

    /// `RELOADING=1` with `MONOTONIC_USEC=` set to `CLOCK_MONOTONIC` now.
    ///
    /// systemd 253 and later require the timestamp for `Type=notify-reload` (it tells a reload
    /// this service started apart from an earlier one); older versions ignore it. Create the
    /// notification right before sending it: the timestamp is taken here.
    public static func reloading() -> SystemdNotification {
        SystemdNotification("RELOADING=1\nMONOTONIC_USEC=\(Posix.monotonicMicroseconds())")
    }

    /// `STATUS=…`: one human-readable line shown by `systemctl status`.
    ///
    /// The protocol ends an assignment at a newline, so line breaks in `text` become spaces.
    public static func status(_ text: String) -> SystemdNotification {
        SystemdNotification("STATUS=\(Self.singleLine(text))")
    }

    /// `ERRNO=…`: the errno-style reason the service is failing, e.g. `ERRNO=2` for `ENOENT`.
    public static func errno(_ code: CInt) -> SystemdNotification {
        SystemdNotification("ERRNO=\(code)")
    }

    /// `EXTEND_TIMEOUT_USEC=…`: asks for `duration` more before the current start-up, reload or
    /// stop timeout fires. Rounded up to whole microseconds.
    public static func extendTimeout(by duration: Duration) -> SystemdNotification {
        SystemdNotification("EXTEND_TIMEOUT_USEC=\(Self.microseconds(duration))")
    }

    static func microseconds(_ duration: Duration) -> UInt64 {
        let (seconds, attoseconds) = duration.components
        guard seconds >= 0 else { return 0 }
        let micro = UInt64(seconds) * 1_000_000 + UInt64(attoseconds / 1_000_000_000_000)
        return attoseconds % 1_000_000_000_000 == 0 ? micro : micro + 1
    }

    private static func singleLine(_ text: String) -> String {
        guard text.utf8.contains(where: { $0 == UInt8(ascii: "\n") || $0 == UInt8(ascii: "\r") }) else {
            return text
        }
        return String(text.map { $0.isNewline ? " " : $0 })
    }
}
