import Foundation
import Glibc
import Synchronization
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
        defer { messages.close() }
        try await DaemonIntegrationTests.withDaemon(environment: ["NOTIFY_SOCKET": manager.path, "WATCHDOG_USEC": "600000"]) { sandbox, daemon in
            // READY=1 only once errorbusd is ready: its "ready" line is already written.
            let ready = try await messages.wait { $0.contains("READY=1") }
            #expect(try daemon.current.standardError.text.contains("errorbusd ready"))
            #expect(ready.contains("STATUS=OK: running, no open incident"))
            // …and only once the control socket accepts connections.
            let log = try daemon.current.standardError.text
            let listening = try #require(log.range(of: "Varlink server listening"))
            #expect(listening.lowerBound < (log.range(of: "errorbusd ready")?.lowerBound ?? log.startIndex))

            // Half the watchdog interval, while the bus answers.
            _ = try await messages.wait { $0 == "WATCHDOG=1" }

            // The status line follows an outage.
            try await sandbox.fault(#"{"route":"all","mode":"down"}"#)
            for number in 0..<3 { try daemon.drop("item-\(number).bin", content: DaemonIntegrationTests.content(number)) }
            let outage = try await messages.wait { $0.hasPrefix("STATUS=OK: sync: 3 parked") }
            #expect(outage.contains("127.0.0.1"))

            // A reload is bracketed by RELOADING=1 (with its monotonic time) and READY=1.
            try daemon.signal(SIGHUP)
            let reloading = try await messages.wait { $0.contains("RELOADING=1") }
            #expect(reloading.contains("MONOTONIC_USEC="))
            _ = try await messages.wait { $0 == "READY=1" }

            try await sandbox.clearFaults()
            try await DirectoryWatcher.wait(for: daemon.outbox) { $0.isEmpty }
            _ = try await messages.wait { $0 == "STATUS=OK: running, no open incident" }
        }
        // withDaemon stopped errorbusd with SIGTERM; what it said on the way out is queued.
        _ = try await messages.wait { $0.contains("STOPPING=1") }
    }
}

/// The datagrams errorbusd sends to the test's notify socket. A thread reads them as they
/// arrive, the way systemd does, so the socket's queue (ten datagrams) never fills while the
/// test is busy elsewhere; waits look through what arrived, on a Dispatch thread rather than the
/// cooperative pool.
final class Notifications: Sendable {
    private let socket: TestSocket
    private let state = Mutex<(received: [String], next: Int, closed: Bool)>(([], 0, false))
    private let arrived = DispatchSemaphore(value: 0)

    init(socket: TestSocket) {
        self.socket = socket
        let thread = Thread { [self] in
            while !state.withLock({ $0.closed }) {
                // Blocks at most a second, so that close() is noticed.
                guard let message = try? socket.receive(timeout: 1) else { continue }
                state.withLock { $0.received.append(message) }
                arrived.signal()
            }
        }
        thread.start()
    }

    /// Stops the reading thread (within a second).
    func close() { state.withLock { $0.closed = true } }

    /// Waits (30 s at most) for a datagram that `matches`, skipping the ones before it, and
    /// returns it.
    func wait(for matches: @escaping @Sendable (String) -> Bool) async throws -> String {
        try await withCheckedThrowingContinuation { continuation in
            DispatchQueue.global().async { [self] in
                let deadline = DispatchTime.now() + .seconds(30)
                while true {
                    let found = state.withLock { state -> String? in
                        while state.next < state.received.count {
                            defer { state.next += 1 }
                            if matches(state.received[state.next]) { return state.received[state.next] }
                        }
                        return nil
                    }
                    if let found { return continuation.resume(returning: found) }
                    if arrived.wait(timeout: deadline) == .timedOut { return continuation.resume(throwing: NotificationTimeout()) }
                }
            }
        }
    }
}

struct NotificationTimeout: Error {}
