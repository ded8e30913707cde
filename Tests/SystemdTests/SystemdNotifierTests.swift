import Foundation
import Glibc
import Systemd
import Testing
import TestSupport

/// `sd_notify`: in process against a datagram socket the test owns (``SystemdNotifier/init(socketPath:)``),
/// and in a child process through `$NOTIFY_SOCKET` and libsystemd (``SystemdNotifier/init()``).
@Suite struct SystemdNotifierTests {
    @Test func sendsEachStateChangeAsOneExactDatagram() throws {
        let directory = try TemporaryDirectory()
        let socket = try TestSocket.datagram(boundTo: "\(directory.path)/notify.sock")
        let notifier = SystemdNotifier(socketPath: socket.path)
        #expect(notifier.isEnabled)

        try notifier.ready()
        try notifier.status("Uploading 3 files")
        let before = Self.monotonicMicroseconds()
        try notifier.reloading()
        let after = Self.monotonicMicroseconds()
        try notifier.ready(status: "Reloaded")
        try notifier.stopping()
        try notifier.watchdog()
        try notifier.extendTimeout(by: .milliseconds(2500))
        try notifier.failing(errno: ENOENT, status: "configuration missing")

        let datagrams = try socket.receiveQueued()
        try #require(datagrams.count == 8, "\(datagrams)")
        #expect(datagrams[0] == "READY=1")
        #expect(datagrams[1] == "STATUS=Uploading 3 files")
        let reloading = datagrams[2].split(separator: "\n", omittingEmptySubsequences: false)
        try #require(reloading.count == 2, "\(datagrams[2])")
        #expect(reloading[0] == "RELOADING=1")
        #expect(reloading[1].hasPrefix("MONOTONIC_USEC="))
        let stamp = try #require(UInt64(reloading[1].dropFirst("MONOTONIC_USEC=".count)))
        #expect((before...after).contains(stamp), "MONOTONIC_USEC must be CLOCK_MONOTONIC at the time of sending")
        #expect(datagrams[3] == "READY=1\nSTATUS=Reloaded")
        #expect(datagrams[4] == "STOPPING=1")
        #expect(datagrams[5] == "WATCHDOG=1")
        #expect(datagrams[6] == "EXTEND_TIMEOUT_USEC=2500000")
        #expect(datagrams[7] == "STATUS=configuration missing\nERRNO=2")
    }

    @Test func statusStaysOneLine() throws {
        let directory = try TemporaryDirectory()
        let socket = try TestSocket.datagram(boundTo: "\(directory.path)/notify.sock")
        try SystemdNotifier(socketPath: socket.path).status("first\nsecond\r\nthird")
        #expect(try socket.receiveQueued() == ["STATUS=first second third"])
    }

    @Test func reachesAbstractNamespaceSockets() throws {
        let socket = try TestSocket.datagram(boundTo: "@errorbus-test-\(UUID().uuidString)")
        try SystemdNotifier(socketPath: socket.path).ready()
        #expect(try socket.receiveQueued() == ["READY=1"])
    }

    @Test func aGoneSocketFailsAtOnce() throws {
        let directory = try TemporaryDirectory()
        let missing = SystemdNotifier(socketPath: "\(directory.path)/gone.sock")
        let gone = try #require(throws: SystemdError.self) { try missing.ready() }
        #expect(gone.code == .callFailed)
        #expect(gone.errnoCode == ENOENT)
        #expect(gone.call == "sendto")

        // The service manager went away and left its socket file behind.
        let stalePath = "\(directory.path)/stale.sock"
        do { _ = try TestSocket.datagram(boundTo: stalePath) }
        let refused = try #require(throws: SystemdError.self) { try SystemdNotifier(socketPath: stalePath).watchdog() }
        #expect(refused.errnoCode == ECONNREFUSED)
    }

    @Test(.timeLimit(.minutes(1))) func aReceiverThatStopsReadingMakesSendsFailNotWait() throws {
        let directory = try TemporaryDirectory()
        let socket = try TestSocket.datagram(boundTo: "\(directory.path)/notify.sock")
        let notifier = SystemdNotifier(socketPath: socket.path)
        var sent = 0
        let full = try #require(throws: SystemdError.self) {
            while sent < 1_000_000 {
                try notifier.watchdog()
                sent += 1
            }
        }
        #expect(full.errnoCode == EAGAIN, "sent \(sent) before the error")
        #expect(try socket.receiveQueued().count == sent)
    }

    @Test func rejectsPathsThatDoNotFitSockaddr() {
        let long = "/tmp/" + String(repeating: "x", count: 200)
        let error = #expect(throws: SystemdError.self) { try SystemdNotifier(socketPath: long).ready() }
        #expect(error?.code == .invalidArgument)
        #expect(error?.errnoCode == ENAMETOOLONG)
    }

    @Test func disabledNotifierSendsNothing() throws {
        #expect(!SystemdNotifier.disabled.isEnabled)
        try SystemdNotifier.disabled.ready(status: "nobody listens")
    }

    // MARK: - Through $NOTIFY_SOCKET and sd_notify, in a child process

    @Test(.timeLimit(.minutes(1))) func environmentNotifierSendsThroughSdNotify() async throws {
        let directory = try TemporaryDirectory()
        let socket = try TestSocket.datagram(boundTo: "\(directory.path)/notify.sock")
        let before = Self.monotonicMicroseconds()
        let run = try await TestHelper.run(["notify"], environment: ["NOTIFY_SOCKET": socket.path])
        let after = Self.monotonicMicroseconds()

        #expect(run.status == 0, "\(run.standardError)")
        #expect(
            run.outputLines == ["enabled", "ready sent", "status sent", "reloading sent", "stopping sent", "watchdog sent"]
        )
        let datagrams = try socket.receiveQueued()
        try #require(datagrams.count == 5, "\(datagrams)")
        #expect(datagrams[0] == "READY=1")
        #expect(datagrams[1] == "STATUS=helper running")
        #expect(datagrams[2].hasPrefix("RELOADING=1\nMONOTONIC_USEC="))
        let stamp = UInt64(datagrams[2].dropFirst("RELOADING=1\nMONOTONIC_USEC=".count))
        #expect(stamp.map { (before...after).contains($0) } == true)
        #expect(datagrams[3] == "STOPPING=1")
        #expect(datagrams[4] == "WATCHDOG=1")
    }

    @Test(.timeLimit(.minutes(1))) func environmentWithoutNotifySocketIsANoOp() async throws {
        let run = try await TestHelper.run(["notify"], environment: [:])
        #expect(run.status == 0, "\(run.standardError)")
        #expect(
            run.outputLines == ["disabled", "ready sent", "status sent", "reloading sent", "stopping sent", "watchdog sent"]
        )
    }

    @Test(.timeLimit(.minutes(1))) func environmentNotifierReportsAGoneSocketWithoutCrashing() async throws {
        let directory = try TemporaryDirectory()
        let run = try await TestHelper.run(["notify"], environment: ["NOTIFY_SOCKET": "\(directory.path)/gone.sock"])
        #expect(run.status == 0, "\(run.standardError)")
        #expect(
            run.outputLines == [
                "enabled",
                "ready failed \(ENOENT) sd_notify",
                "status failed \(ENOENT) sd_notify",
                "reloading failed \(ENOENT) sd_notify",
                "stopping failed \(ENOENT) sd_notify",
                "watchdog failed \(ENOENT) sd_notify",
            ]
        )
    }

    @Test(.timeLimit(.minutes(1))) func watchdogIntervalComesFromSdWatchdogEnabled() async throws {
        // WATCHDOG_PID must name the helper itself: the shell's $$ is the helper once it execs.
        let ours = try await ChildProcess.run(
            "/bin/sh",
            ["-c", "WATCHDOG_PID=$$ exec \"$0\" watchdog-interval", TestHelper.path],
            environment: ["WATCHDOG_USEC": "3000000"]
        )
        #expect(ours.outputLines == ["interval 3000000"], "\(ours.standardError)")

        let someoneElses = try await TestHelper.run(
            ["watchdog-interval"],
            environment: ["WATCHDOG_USEC": "3000000", "WATCHDOG_PID": "1"]
        )
        #expect(someoneElses.outputLines == ["none"])

        let none = try await TestHelper.run(["watchdog-interval"])
        #expect(none.outputLines == ["none"])
    }

    static func monotonicMicroseconds() -> UInt64 {
        var now = timespec()
        clock_gettime(CLOCK_MONOTONIC, &now)
        return UInt64(now.tv_sec) * 1_000_000 + UInt64(now.tv_nsec) / 1_000
    }
}
