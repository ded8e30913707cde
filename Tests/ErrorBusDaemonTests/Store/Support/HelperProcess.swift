import Foundation
import Glibc
import Synchronization

/// `store-test-helper` running as a real child process: its standard output collected line by
/// line as it arrives (standard error goes to a file), so a test can wait for a number of lines
/// and kill it with SIGKILL at that moment.
///
/// One thread reads the output to its end, then waits for the exit status. Cancelling a task
/// that waits on the process (a `.timeLimit` running out) kills it.
final class HelperProcess: Sendable {
    private struct State {
        var lines: [String] = []
        var partial: [UInt8] = []
        var ended = false
        var status: Int32?
        var lineWaiters: [(count: Int, continuation: CheckedContinuation<Bool, Never>)] = []
        var exitWaiters: [CheckedContinuation<Int32, Never>] = []
    }

    let processIdentifier: pid_t
    private let state = Mutex(State())

    /// The helper's path: next to the test binary.
    static var executable: String {
        let testBinary = (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")) ?? CommandLine.arguments[0]
        return URL(fileURLWithPath: testBinary).deletingLastPathComponent().appendingPathComponent("store-test-helper").path
    }

    /// Starts the helper with `arguments`; its standard error goes to `standardError` (a file).
    init(_ arguments: [String], standardError: String) throws {
        // Close-on-exec from the start, so that no child another test starts meanwhile inherits
        // the write end and keeps the output open after this helper died.
        var pipe: [CInt] = [-1, -1]
        guard socketpair(AF_UNIX, CInt(SOCK_STREAM.rawValue) | CInt(SOCK_CLOEXEC.rawValue), 0, &pipe) == 0 else {
            throw POSIXError(.init(rawValue: errno) ?? .EIO)
        }
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_adddup2(&actions, pipe[1], 1)
        posix_spawn_file_actions_addopen(&actions, 2, standardError, O_WRONLY | O_CREAT | O_TRUNC, 0o644)

        let argv = ([Self.executable] + arguments).map { strdup($0) } + [nil]
        defer { for pointer in argv { free(pointer) } }
        var pid = pid_t()
        let result = posix_spawn(&pid, Self.executable, &actions, nil, argv, environ)
        close(pipe[1])
        guard result == 0 else {
            close(pipe[0])
            throw POSIXError(.init(rawValue: result) ?? .EIO)
        }
        self.processIdentifier = pid

        let descriptor = pipe[0]
        let child = pid
        Thread.detachNewThread { [self] in
            var buffer = [UInt8](repeating: 0, count: 65_536)
            while true {
                let count = read(descriptor, &buffer, buffer.count)
                if count > 0 {
                    received(buffer[..<count])
                } else if count == 0 || errno != EINTR {
                    break
                }
            }
            close(descriptor)
            var status: Int32 = 0
            while waitpid(child, &status, 0) == -1 && errno == EINTR {}
            // WIFEXITED / WEXITSTATUS / WTERMSIG are macros Swift does not import.
            let signal = status & 0x7f
            finished(status: signal == 0 ? (status >> 8) & 0xff : 128 + signal)
        }
    }

    /// The complete lines received so far.
    var lines: [String] { state.withLock { $0.lines } }

    /// Waits until at least `count` lines have arrived; `false` if the output ended first.
    func waitForLines(_ count: Int) async -> Bool {
        await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                let answer = state.withLock { state -> Bool? in
                    if state.lines.count >= count { return true }
                    if state.ended { return false }
                    state.lineWaiters.append((count, continuation))
                    return nil
                }
                if let answer { continuation.resume(returning: answer) }
            }
        } onCancel: {
            self.kill()
        }
    }

    /// Sends SIGKILL (unless the process has already been waited for: its pid may be reused).
    func kill() {
        state.withLock { state in
            if state.status == nil { _ = Glibc.kill(processIdentifier, SIGKILL) }
        }
    }

    /// Waits until the output has ended and the process has exited: the exit code, or 128 + the
    /// signal number.
    func waitForExit() async -> Int32 {
        await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                let status = state.withLock { state -> Int32? in
                    if let status = state.status { return status }
                    state.exitWaiters.append(continuation)
                    return nil
                }
                if let status { continuation.resume(returning: status) }
            }
        } onCancel: {
            self.kill()
        }
    }

    private func received(_ bytes: ArraySlice<UInt8>) {
        let ready = state.withLock { state -> [CheckedContinuation<Bool, Never>] in
            for byte in bytes {
                if byte == UInt8(ascii: "\n") {
                    state.lines.append(String(decoding: state.partial, as: UTF8.self))
                    state.partial.removeAll(keepingCapacity: true)
                } else {
                    state.partial.append(byte)
                }
            }
            let count = state.lines.count
            let ready = state.lineWaiters.filter { $0.count <= count }.map(\.continuation)
            state.lineWaiters.removeAll { $0.count <= count }
            return ready
        }
        for continuation in ready { continuation.resume(returning: true) }
    }

    private func finished(status: Int32) {
        let (lineWaiters, exitWaiters) = state.withLock { state in
            state.ended = true
            state.status = status
            defer {
                state.lineWaiters = []
                state.exitWaiters = []
            }
            return (state.lineWaiters.map(\.continuation), state.exitWaiters)
        }
        for waiter in lineWaiters { waiter.resume(returning: false) }
        for waiter in exitWaiters { waiter.resume(returning: status) }
    }
}
