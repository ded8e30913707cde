@testable import ErrorBusDaemon
import Logging
import Synchronization
import Systemd
import Testing
import TestSupport

/// The watchdog pings a `$NOTIFY_SOCKET` the test owns only while its health check answers.
@Suite(.timeLimit(.minutes(1)))
struct WatchdogTests {
    @Test func pingsStopWhileTheHealthCheckHangsAndResumeWhenItAnswers() async throws {
        let directory = try TemporaryDirectory()
        let socket = try TestSocket.datagram(boundTo: directory.path + "/notify")
        let manager = ServiceManager(notifier: SystemdNotifier(socketPath: socket.path), logger: Logger(label: "test"))
        let bus = WedgeableHealthCheck()
        let watchdog = Watchdog(interval: .milliseconds(400), manager: manager, logger: Logger(label: "test")) {
            await bus.answer()
        }
        let running = Task { try await watchdog.run() }
        defer { running.cancel() }

        // Waited for on a thread of its own: a blocking `recv` on one of the cooperative pool's two
        // threads, beside the suite's other tests, kept the watchdog from pinging for 20 s (CI,
        // errno EAGAIN).
        #expect(try await socket.received(timeout: 20) == "WATCHDOG=1")

        bus.wedge()
        // Pings already decided may still arrive; then the answer is too old and they stop.
        var late = 0
        while (try? await socket.received(timeout: 2)) != nil {
            late += 1
            try #require(late < 5, "the watchdog kept pinging with its health check hanging")
        }

        bus.release()
        #expect(try await socket.received(timeout: 20) == "WATCHDOG=1")
    }
}

/// A health check that answers at once, or hangs from ``wedge()`` until ``release()``.
final class WedgeableHealthCheck: Sendable {
    private let state = Mutex<(wedged: Bool, waiting: [CheckedContinuation<Void, Never>])>((false, []))

    func answer() async -> Bool {
        await withCheckedContinuation { continuation in
            let hang = state.withLock { state in
                if state.wedged { state.waiting.append(continuation) }
                return state.wedged
            }
            if !hang { continuation.resume() }
        }
        return true
    }

    func wedge() { state.withLock { $0.wedged = true } }

    func release() {
        let waiting = state.withLock { state in
            state.wedged = false
            defer { state.waiting = [] }
            return state.waiting
        }
        for continuation in waiting { continuation.resume() }
    }
}
