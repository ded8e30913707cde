import Glibc
import Synchronization

/// The real systemd-journald the journal tests write to and read back with journalctl.
public enum Journald {
    public static let socketPath = "/run/systemd/journal/socket"

    private static let startup = Mutex(())

    /// Starts `/lib/systemd/systemd-journald` unless a journald already answers on its socket.
    ///
    /// systemd is not PID 1 on a build machine or in a container, so nobody else starts it. The
    /// daemon is started with `$NOTIFY_SOCKET` pointing at a socket of ours, and this waits for its
    /// `READY=1` (at most 10 seconds). It keeps running after the tests, like a system service.
    public static func ensureRunning() throws {
        try self.startup.withLock { _ throws in
            if self.isAnswering() { return }
            let directory = try TemporaryDirectory()
            let notify = try TestSocket.datagram(boundTo: "\(directory.path)/notify.sock")

            try ChildProcess.startDaemon("/lib/systemd/systemd-journald", environment: ["NOTIFY_SOCKET": notify.path])

            while true {
                let state = try notify.receive(timeout: 10)
                if state.split(separator: "\n").contains("READY=1") { break }
            }
            guard self.isAnswering() else {
                throw TestSocketError(description: "systemd-journald said READY=1 but \(socketPath) does not answer")
            }
        }
    }

    /// Whether something is bound to the journal socket (connecting a datagram socket to a path
    /// nobody listens on fails with `ECONNREFUSED`).
    public static func isAnswering() -> Bool {
        (try? TestSocket.datagram(connectedTo: socketPath)) != nil
    }
}
