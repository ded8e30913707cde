import Glibc
import Logging
import Systemd

/// The program `SystemdTests` runs as a real child process, for what needs a process of its own:
/// descriptors passed by `systemd-socket-activate`, `sd_notify` and `sd_watchdog_enabled` reading
/// the environment, and a journal outage inside a private mount namespace.
///
/// Every command prints what it saw on standard output, one fact per line, for the test to check.
@main
struct SystemdTestHelper {
    static func main() {
        let arguments = Array(CommandLine.arguments.dropFirst())
        switch arguments.first {
        case "listen-fds": self.listenFileDescriptors(accepting: arguments.dropFirst().first)
        case "notify": self.notify()
        case "watchdog-interval": self.watchdogInterval()
        case "journal-outage" where arguments.count == 2: self.journalOutage(marker: arguments[1])
        case "journal-bench" where arguments.count == 2: self.journalBenchmark(count: Int(arguments[1]) ?? 10_000)
        default:
            self.fail(
                "usage: systemd-test-helper listen-fds [NAME] | notify | watchdog-interval "
                    + "| journal-outage MARKER | journal-bench COUNT"
            )
        }
        fflush(nil)
    }

    /// Prints the socket-activated descriptors, checks that asking twice gives the same answer,
    /// then answers one connection on the descriptor named `name`.
    static func listenFileDescriptors(accepting name: String?) {
        do {
            let activation = try SocketActivation.fromEnvironment()
            for descriptor in activation.descriptors {
                print("fd \(descriptor.fileDescriptor) \(descriptor.name)")
            }
            let again = try SocketActivation.fromEnvironment()
            print("second call \(again == activation ? "same" : "different")")
            fflush(nil)

            guard let name else { return }
            guard let listener = activation.first(named: name) else { self.fail("no descriptor named \(name)") }
            let connection = accept(listener.fileDescriptor, nil, nil)
            guard connection >= 0 else { self.fail("accept: errno \(errno)") }
            let reply = Array("hello from \(name)\n".utf8)
            _ = reply.withUnsafeBytes { write(connection, $0.baseAddress, $0.count) }
            close(connection)
        } catch {
            print("error \(error.errnoCode) \(error.call)")
        }
    }

    /// Sends one notification of each kind through `$NOTIFY_SOCKET` with `sd_notify`.
    static func notify() {
        let notifier = SystemdNotifier()
        print(notifier.isEnabled ? "enabled" : "disabled")
        let steps: [(String, () throws(SystemdError) -> Void)] = [
            ("ready", { () throws(SystemdError) in try notifier.ready() }),
            ("status", { () throws(SystemdError) in try notifier.status("helper running") }),
            ("reloading", { () throws(SystemdError) in try notifier.reloading() }),
            ("stopping", { () throws(SystemdError) in try notifier.stopping() }),
            ("watchdog", { () throws(SystemdError) in try notifier.watchdog() }),
        ]
        for (name, step) in steps {
            do throws(SystemdError) {
                try step()
                print("\(name) sent")
            } catch {
                print("\(name) failed \(error.errnoCode) \(error.call)")
            }
        }
    }

    /// Prints `sd_watchdog_enabled`'s interval in microseconds, or `none`.
    static func watchdogInterval() {
        do {
            if let interval = try SystemdNotifier.watchdogInterval() {
                let (seconds, attoseconds) = interval.components
                print("interval \(seconds * 1_000_000 + attoseconds / 1_000_000_000_000)")
            } else {
                print("none")
            }
        } catch {
            print("error \(error.errnoCode) \(error.call)")
        }
    }

    /// Logs through a journal outage and its end. Must run in a private mount namespace with an
    /// empty tmpfs mounted on `/run/systemd/journal` (`unshare --mount` and `mount -t tmpfs`):
    ///
    /// 1. no journal socket: libsystemd would drop the entry silently;
    /// 2. a socket file nobody listens on: `sd_journal_sendv` fails with `ECONNREFUSED`;
    /// 3. the tmpfs unmounted, so the real journal is back.
    static func journalOutage(marker: String) {
        guard self.inPrivateMountNamespace() else {
            self.fail("journal-outage must run in a private mount namespace (unshare --mount)")
        }
        let journalDirectory = "/run/systemd/journal"
        print("pid \(getpid())")

        let writer = JournalWriter(retryInterval: .zero)
        var logger = Logger(label: "systemd-test-helper") {
            JournalLogHandler(label: $0, writer: writer, syslogIdentifier: "systemd-test-helper")
        }
        logger[metadataKey: "ERRORBUS_TEST_MARKER"] = "\(marker)"

        logger.error("outage: no socket")
        print("reachable after missing socket: \(writer.isJournalReachable)")

        let stale = socket(AF_UNIX, CInt(SOCK_DGRAM.rawValue), 0)
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &address.sun_path) { $0.copyBytes(from: Array("\(journalDirectory)/socket".utf8)) }
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(stale, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        guard bound == 0 else { self.fail("bind stale socket: errno \(errno)") }
        close(stale)

        logger.error("outage: connection refused")
        print("reachable after stale socket: \(writer.isJournalReachable)")

        guard umount2(journalDirectory, CInt(MNT_DETACH)) == 0 else { self.fail("umount: errno \(errno)") }
        logger.error("back in the journal")
        print("reachable after unmount: \(writer.isJournalReachable)")
    }

    /// Measures the cost of one log call with three metadata entries, journal reachable.
    static func journalBenchmark(count: Int) {
        let writer = JournalWriter()
        var logger = Logger(label: "systemd-test-helper.bench") { JournalLogHandler(label: $0, writer: writer) }
        logger[metadataKey: "errorbus.service"] = "bench"
        let clock = ContinuousClock()
        let elapsed = clock.measure {
            for index in 0..<count {
                logger.info("benchmark entry", metadata: ["index": "\(index)", "errorbus.jobs": "3"])
            }
        }
        let (seconds, attoseconds) = elapsed.components
        let nanoseconds = Double(seconds) * 1e9 + Double(attoseconds) / 1e9
        print("log calls \(count), ns per call \(Int(nanoseconds / Double(count))), reachable \(writer.isJournalReachable)")
    }

    /// Whether this process has a mount namespace of its own, unlike the process that started it
    /// (`unshare` and `sh` exec into the helper, so the parent is the test).
    private static func inPrivateMountNamespace() -> Bool {
        var own = stat()
        var parent = stat()
        guard stat("/proc/self/ns/mnt", &own) == 0, stat("/proc/\(getppid())/ns/mnt", &parent) == 0 else { return false }
        return own.st_ino != parent.st_ino
    }

    private static func fail(_ message: String) -> Never {
        fflush(nil)
        let line = Array("systemd-test-helper: \(message)\n".utf8)
        _ = line.withUnsafeBytes { write(STDERR_FILENO, $0.baseAddress, $0.count) }
        exit(2)
    }
}
