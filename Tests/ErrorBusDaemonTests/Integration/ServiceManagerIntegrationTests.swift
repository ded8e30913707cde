import Foundation
import Glibc
import Testing
import TestSupport

/// The real `errorbusd` reporting to a `$NOTIFY_SOCKET` this test owns, the way systemd's
/// `Type=notify` sees it.
@Suite("Integration: errorbusd and its service manager", .serialized, .timeLimit(.minutes(2)))
struct ServiceManagerIntegrationTests {
    @Test func readyStatusReloadingAndStoppingReachTheServiceManager() async throws {
        let directory = try TemporaryDirectory()
        let manager = try TestSocket.datagram(boundTo: directory.path + "/notify")
        let messages = Notifications(socket: manager)
        try await DaemonIntegrationTests.withDaemon(environment: ["NOTIFY_SOCKET": manager.path, "WATCHDOG_USEC": "600000"]) { sandbox, daemon in
            // READY=1 only once errorbusd is ready: its "ready" line is already written.
            let ready = try await messages.wait { $0.contains("READY=1") }
            #expect(try daemon.current.standardError.text.contains("errorbusd ready"))
            #expect(ready.contains("STATUS=running, no open incident"))
            // …and only once the control socket accepts connections.
            let log = try daemon.current.standardError.text
            let listening = try #require(log.range(of: "Varlink server listening"))
            #expect(listening.lowerBound < (log.range(of: "errorbusd ready")?.lowerBound ?? log.startIndex))
            // (No call on the socket here: while the test is not reading its notify socket, ten
            // queued datagrams block errorbusd's sd_notify, and with it the call's handler.)

            // Half the watchdog interval, while the bus answers.
            _ = try await messages.wait { $0 == "WATCHDOG=1" }

            // The status line follows an outage.
            try await sandbox.fault(#"{"route":"all","mode":"down"}"#)
            for number in 0..<3 { try daemon.drop("item-\(number).bin", content: DaemonIntegrationTests.content(number)) }
            let outage = try await messages.wait { $0.hasPrefix("STATUS=sync: 3 parked") }
            #expect(outage.contains("127.0.0.1"))

            // A reload is bracketed by RELOADING=1 (with its monotonic time) and READY=1.
            try daemon.signal(SIGHUP)
            let reloading = try await messages.wait { $0.contains("RELOADING=1") }
            #expect(reloading.contains("MONOTONIC_USEC="))
            _ = try await messages.wait { $0 == "READY=1" }

            try await sandbox.clearFaults()
            try await DirectoryWatcher.wait(for: daemon.outbox) { $0.isEmpty }
            _ = try await messages.wait { $0 == "STATUS=running, no open incident" }
        }
        // withDaemon stopped errorbusd with SIGTERM; what it said on the way out is queued.
        _ = try await messages.wait { $0.contains("STOPPING=1") }
    }
}

/// The datagrams errorbusd sent to the test's notify socket, read as they arrive.
final class Notifications: Sendable {
    let socket: TestSocket

    init(socket: TestSocket) { self.socket = socket }

    /// Waits (30 s at most) for a datagram that `matches`, skipping the others, and returns it.
    func wait(for matches: @escaping @Sendable (String) -> Bool) async throws -> String {
        let socket = self.socket
        return try await Task.detached {
            for _ in 0..<30 {
                // Blocks at most a second per call.
                guard let message = try? socket.receive(timeout: 1) else { continue }
                if matches(message) { return message }
            }
            throw NotificationTimeout()
        }.value
    }
}

struct NotificationTimeout: Error {}
