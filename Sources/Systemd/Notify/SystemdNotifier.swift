import Glibc

/// Reports a service's state to its service manager (the `sd_notify` protocol).
///
/// Create one with ``init()`` in a daemon: it sends with libsystemd's `sd_notify` to the socket
/// named by `$NOTIFY_SOCKET`, and does nothing at all when that variable is not set (the daemon
/// runs in a terminal, or under a `Type=simple` unit). Tests and other supervisors use
/// ``init(socketPath:)`` to name the datagram socket directly, without touching the process
/// environment.
///
/// A notifier is a small value: copy it to every task that reports state. Every method is safe to
/// call from any task and never blocks for long:
///
/// - `sd_notify` opens a fresh socket for each message, so a service manager that restarted and
///   re-created its socket is found again on the next call. A socket that is gone fails at once
///   with `ENOENT` or `ECONNREFUSED`.
/// - With ``init(socketPath:)`` the datagram is sent with `MSG_DONTWAIT`: a receiver that stopped
///   reading makes the call throw `EAGAIN` instead of waiting.
///
/// Failures are thrown as ``SystemdError``; a daemon typically logs them and carries on, since a
/// missed `STATUS=` must not stop its work.
public struct SystemdNotifier: Sendable, Hashable {
    private enum Destination: Sendable, Hashable {
        case none
        case environment
        case socket(path: String)
    }

    private let destination: Destination

    /// A notifier for the service manager named by `$NOTIFY_SOCKET`, using `sd_notify`.
    ///
    /// Reads the environment once to decide ``isEnabled``; libsystemd reads it again on each
    /// send. The variable is left in place, because `unsetenv` is not safe while other threads
    /// read the environment.
    public init() {
        self.destination = getenv("NOTIFY_SOCKET") == nil ? .none : .environment
    }

    /// A notifier that sends to the `AF_UNIX` datagram socket at `socketPath`.
    ///
    /// A path beginning with `@` names a socket in the abstract namespace, as in `$NOTIFY_SOCKET`.
    public init(socketPath: String) {
        self.destination = .socket(path: socketPath)
    }

    /// A notifier that sends nothing.
    public static let disabled = SystemdNotifier(destination: .none)

    private init(destination: Destination) {
        self.destination = destination
    }

    /// Whether notifications go anywhere. `false` outside a `Type=notify` service.
    public var isEnabled: Bool { self.destination != .none }

    /// Sends `notifications` as one datagram, one assignment per line.
    public func send(_ notifications: [SystemdNotification]) throws(SystemdError) {
        guard !notifications.isEmpty else { return }
        let state = notifications.lazy.map(\.assignments).joined(separator: "\n")
        switch self.destination {
        case .none:
            return
        case .environment:
            _ = try Libsystemd.notify(state)
        case .socket(let path):
            try NotifySocket.send(state, to: path)
        }
    }

    /// Sends `notifications` as one datagram, one assignment per line.
    public func send(_ notifications: SystemdNotification...) throws(SystemdError) {
        try self.send(notifications)
    }

    /// `READY=1`, optionally with a new `STATUS=` line in the same datagram.
    public func ready(status: String? = nil) throws(SystemdError) {
        try self.send([.ready] + (status.map { [.status($0)] } ?? []))
    }

    /// `RELOADING=1` and `MONOTONIC_USEC=` now, optionally with a `STATUS=` line.
    ///
    /// Send ``ready(status:)`` once the reload is complete.
    public func reloading(status: String? = nil) throws(SystemdError) {
        try self.send([.reloading()] + (status.map { [.status($0)] } ?? []))
    }

    /// `STOPPING=1`, optionally with a `STATUS=` line.
    public func stopping(status: String? = nil) throws(SystemdError) {
        try self.send([.stopping] + (status.map { [.status($0)] } ?? []))
    }

    /// `STATUS=…`: the one human line `systemctl status` shows.
    public func status(_ text: String) throws(SystemdError) {
        try self.send(.status(text))
    }

    /// `WATCHDOG=1`. Send it at about half of ``watchdogInterval()``, and only while the service
    /// is actually able to do its work.
    public func watchdog() throws(SystemdError) {
        try self.send(.watchdog)
    }

    /// `EXTEND_TIMEOUT_USEC=…`: asks for more time before the current start, reload or stop
    /// times out.
    public func extendTimeout(by duration: Duration) throws(SystemdError) {
        try self.send(.extendTimeout(by: duration))
    }

    /// `ERRNO=…` with a `STATUS=` line: why the service is about to fail.
    public func failing(errno code: CInt, status: String) throws(SystemdError) {
        try self.send(.status(status), .errno(code))
    }
}
