import Foundation
import Glibc
import Synchronization

/// A real child process started by a network or TLS test (`unshare`, `nsenter`, `openssl`), with
/// its standard output and error collected as they arrive. Cancelling a task that waits on it (a
/// `.timeLimit` running out) terminates it.
///
/// The shape of `SystemdTests`' `ChildProcess`: spawned with `posix_spawn`, each output stream a
/// socket pair created with `SOCK_CLOEXEC` so no other child started concurrently by another test
/// inherits it and holds it open; one thread per stream reads it to its end and one thread waits
/// for the exit status, all three ending with the child.
final class SpawnedProcess: Sendable {
    /// What a finished process left behind.
    struct Finished: Sendable {
        /// The exit code, or 128 + the signal number when a signal ended the process.
        var status: Int32
        var standardOutput: String
        var standardError: String

        /// Standard output, line by line.
        var outputLines: [String] { standardOutput.split(separator: "\n").map(String.init) }
    }

    struct Failure: Error, CustomStringConvertible {
        var call: String
        var errnoCode: Int32
        var description: String { "\(call): errno \(errnoCode)" }
    }

    let standardOutput = SpawnedProcessOutput()
    let standardError = SpawnedProcessOutput()
    let processIdentifier: pid_t
    private let exitStatus = SpawnedProcessExitStatus()

    /// Starts `executable` (an absolute path) with `arguments`, inheriting the test's environment.
    init(_ executable: String, _ arguments: [String]) throws {
        let output = try Self.socketPair()
        let error = try Self.socketPair()
        processIdentifier = try Self.spawn(executable, arguments, standardOutput: output.child, standardError: error.child) {
            for descriptor in [output.parent, output.child, error.parent, error.child] { close(descriptor) }
        }
        close(output.child)
        close(error.child)

        for (descriptor, collector) in [(output.parent, standardOutput), (error.parent, standardError)] {
            Thread.detachNewThread {
                var buffer = [UInt8](repeating: 0, count: 16_384)
                while true {
                    let count = read(descriptor, &buffer, buffer.count)
                    if count > 0 {
                        collector.append(buffer[..<count])
                    } else if count == 0 || errno != EINTR {
                        break
                    }
                }
                close(descriptor)
                collector.finish()
            }
        }
        let pid = processIdentifier
        Thread.detachNewThread { [exitStatus] in
            var status: Int32 = 0
            while waitpid(pid, &status, 0) == -1 && errno == EINTR {}
            // WIFEXITED / WEXITSTATUS / WTERMSIG are macros Swift does not import.
            let signal = status & 0x7f
            exitStatus.set(signal == 0 ? (status >> 8) & 0xff : 128 + signal)
        }
    }

    /// Runs `executable` to the end.
    static func run(_ executable: String, _ arguments: [String]) async throws -> Finished {
        try await SpawnedProcess(executable, arguments).waitForExit()
    }

    /// The absolute path of `name` on `$PATH` (and the sbin directories), if any.
    static func find(_ name: String) -> String? {
        let path = ProcessInfo.processInfo.environment["PATH"] ?? ""
        let directories = path.split(separator: ":").map(String.init) + ["/usr/sbin", "/sbin", "/usr/bin", "/bin"]
        return directories.map { "\($0)/\(name)" }.first { access($0, X_OK) == 0 }
    }

    /// Waits until standard output contains `needle`; `false` if the stream ended first.
    func waitForOutput(containing needle: String) async -> Bool {
        await withTaskCancellationHandler {
            await standardOutput.wait(for: needle)
        } onCancel: {
            terminate()
        }
    }

    /// Waits until the process has exited and both streams have ended.
    func waitForExit() async -> Finished {
        await withTaskCancellationHandler {
            let status = await exitStatus.wait()
            await standardOutput.waitForEnd()
            await standardError.waitForEnd()
            return Finished(status: status, standardOutput: standardOutput.text, standardError: standardError.text)
        } onCancel: {
            terminate()
        }
    }

    /// Sends `signal` (SIGTERM by default) unless the process has already been waited for (its
    /// pid may be reused then).
    func terminate(signal: Int32 = SIGTERM) {
        if !exitStatus.isSet { kill(processIdentifier, signal) }
    }

    private static func socketPair() throws -> (parent: CInt, child: CInt) {
        var ends: [CInt] = [-1, -1]
        guard socketpair(AF_UNIX, CInt(SOCK_STREAM.rawValue) | CInt(SOCK_CLOEXEC.rawValue), 0, &ends) == 0 else {
            throw Failure(call: "socketpair", errnoCode: errno)
        }
        return (ends[0], ends[1])
    }

    private static func spawn(
        _ executable: String,
        _ arguments: [String],
        standardOutput: CInt,
        standardError: CInt,
        onFailure: () -> Void
    ) throws -> pid_t {
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_adddup2(&actions, standardOutput, 1)
        posix_spawn_file_actions_adddup2(&actions, standardError, 2)

        // Children start with default signal handling and nothing blocked, whatever the test
        // runner did with SIGPIPE.
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        var defaults = sigset_t()
        sigfillset(&defaults)
        var mask = sigset_t()
        sigemptyset(&mask)
        posix_spawnattr_setsigdefault(&attributes, &defaults)
        posix_spawnattr_setsigmask(&attributes, &mask)
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSIGMASK))

        let argv = ([executable] + arguments).map { strdup($0) } + [nil]
        let envp = ProcessInfo.processInfo.environment.map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer {
            for pointer in argv { free(pointer) }
            for pointer in envp { free(pointer) }
        }

        var pid = pid_t()
        let result = posix_spawn(&pid, executable, &actions, &attributes, argv, envp)
        guard result == 0 else {
            onFailure()
            throw Failure(call: "posix_spawn \(executable)", errnoCode: result)
        }
        return pid
    }
}

/// The exit status of a child process, once it has one.
private final class SpawnedProcessExitStatus: Sendable {
    private let state = Mutex<(status: Int32?, waiters: [CheckedContinuation<Int32, Never>])>((nil, []))

    var isSet: Bool { state.withLock { $0.status != nil } }

    func set(_ status: Int32) {
        let waiters = state.withLock { state in
            state.status = status
            defer { state.waiters = [] }
            return state.waiters
        }
        for waiter in waiters { waiter.resume(returning: status) }
    }

    func wait() async -> Int32 {
        await withCheckedContinuation { continuation in
            let status = state.withLock { state -> Int32? in
                if let status = state.status { return status }
                state.waiters.append(continuation)
                return nil
            }
            if let status { continuation.resume(returning: status) }
        }
    }
}
