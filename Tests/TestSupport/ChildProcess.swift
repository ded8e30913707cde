public import Foundation
import Glibc
import Synchronization

/// A system call made to start or talk to a child process failed.
public struct ChildProcessError: Error, CustomStringConvertible {
    public let description: String

    public init(description: String) {
        self.description = description
    }

    static func call(_ name: String, _ code: CInt) -> ChildProcessError {
        ChildProcessError(description: "\(name): \(String(cString: strerror(code))) (errno \(code))")
    }
}

/// A real child process started by a test, with its standard output and error collected as they
/// arrive. Cancelling a task that waits on it (a `.timeLimit` running out) terminates it.
///
/// Spawned with `posix_spawn`; each output stream is a socket pair created with `SOCK_CLOEXEC`,
/// so no other child started concurrently by another test can inherit it and hold it open. One
/// thread per stream reads it to its end and one thread waits for the exit status; all three end
/// with the child.
public final class ChildProcess: Sendable {
    /// What a finished process left behind.
    public struct Finished: Sendable {
        /// The exit code, or 128 + the signal number when a signal ended the process.
        public var status: Int32
        public var standardOutput: String
        public var standardError: String

        /// Standard output, line by line.
        public var outputLines: [String] { self.standardOutput.split(separator: "\n").map(String.init) }
        /// Standard error, line by line.
        public var errorLines: [String] { self.standardError.split(separator: "\n").map(String.init) }
    }

    public let standardOutput = OutputCollector()
    public let standardError = OutputCollector()
    public let processIdentifier: pid_t
    private let exitStatus = ExitStatus()

    /// Starts `executable` with `arguments`; with `environment`, the child sees exactly those
    /// variables, otherwise it inherits the test's.
    public init(_ executable: String, _ arguments: [String], environment: [String: String]? = nil) throws {
        let output = try Self.socketPair()
        let error = try Self.socketPair()
        self.processIdentifier = try Self.spawn(
            executable,
            arguments,
            environment: environment,
            standardOutput: output.child,
            standardError: error.child
        ) {
            for descriptor in [output.parent, output.child, error.parent, error.child] { close(descriptor) }
        }
        close(output.child)
        close(error.child)

        for (descriptor, collector) in [(output.parent, self.standardOutput), (error.parent, self.standardError)] {
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
        let pid = self.processIdentifier
        Thread.detachNewThread { [exitStatus] in
            var status: Int32 = 0
            while waitpid(pid, &status, 0) == -1 && errno == EINTR {}
            // WIFEXITED / WEXITSTATUS / WTERMSIG are macros Swift does not import.
            let signal = status & 0x7f
            exitStatus.set(signal == 0 ? (status >> 8) & 0xff : 128 + signal)
        }
    }

    /// Runs `executable` to the end.
    public static func run(_ executable: String, _ arguments: [String], environment: [String: String]? = nil) async throws -> Finished {
        try await ChildProcess(executable, arguments, environment: environment).waitForExit()
    }

    /// Starts a daemon that outlives the test: standard streams on /dev/null, its own session,
    /// never waited for.
    public static func startDaemon(_ executable: String, environment: [String: String]) throws {
        let null = open("/dev/null", O_RDWR | O_CLOEXEC)
        guard null >= 0 else { throw ChildProcessError.call("open", errno) }
        defer { close(null) }
        _ = try self.spawn(executable, [], environment: environment, standardOutput: null, standardError: null, newSession: true) {}
    }

    /// The first executable called `name` on `PATH` (or in the usual system directories).
    public static func find(_ name: String) -> String? {
        let path = ProcessInfo.processInfo.environment["PATH"] ?? ""
        let directories = path.split(separator: ":").map(String.init) + ["/usr/sbin", "/sbin", "/usr/bin", "/bin"]
        return directories.map { "\($0)/\(name)" }.first { access($0, X_OK) == 0 }
    }

    /// Waits until standard output contains `needle`; `false` if the stream ended first.
    public func waitForStandardOutput(containing needle: String) async -> Bool {
        await withTaskCancellationHandler {
            await self.standardOutput.wait(for: needle)
        } onCancel: {
            self.terminate()
        }
    }

    /// Waits until standard error contains `needle`; `false` if the stream ended first.
    public func waitForStandardError(containing needle: String) async -> Bool {
        await withTaskCancellationHandler {
            await self.standardError.wait(for: needle)
        } onCancel: {
            self.terminate()
        }
    }

    /// Waits until the process has exited and both streams have ended.
    public func waitForExit() async -> Finished {
        await withTaskCancellationHandler {
            let status = await self.exitStatus.wait()
            await self.standardOutput.waitForEnd()
            await self.standardError.waitForEnd()
            return Finished(
                status: status,
                standardOutput: self.standardOutput.text,
                standardError: self.standardError.text
            )
        } onCancel: {
            self.terminate()
        }
    }

    /// Sends SIGTERM unless the process has already been waited for (its pid may be reused then).
    public func terminate() {
        self.signal(SIGTERM)
    }

    /// Sends `signal` unless the process has already been waited for (its pid may be reused then).
    public func signal(_ signal: CInt) {
        if !self.exitStatus.isSet { kill(self.processIdentifier, signal) }
    }

    /// Whether the process has exited (and been waited for).
    public var hasExited: Bool { self.exitStatus.isSet }

    private static func socketPair() throws -> (parent: CInt, child: CInt) {
        var ends: [CInt] = [-1, -1]
        guard socketpair(AF_UNIX, CInt(SOCK_STREAM.rawValue) | CInt(SOCK_CLOEXEC.rawValue), 0, &ends) == 0 else {
            throw ChildProcessError.call("socketpair", errno)
        }
        return (ends[0], ends[1])
    }

    private static func spawn(
        _ executable: String,
        _ arguments: [String],
        environment: [String: String]?,
        standardOutput: CInt,
        standardError: CInt,
        newSession: Bool = false,
        onFailure: () -> Void
    ) throws -> pid_t {
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_adddup2(&actions, standardOutput, 1)
        posix_spawn_file_actions_adddup2(&actions, standardError, 2)
        // Nothing else: a socket another test holds open without close-on-exec would otherwise
        // stay open in every child spawned meanwhile, and its peer would never see it close.
        _ = spawnActionsCloseFrom(&actions, 3)

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
        var flags = CInt(POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSIGMASK)
        if newSession { flags |= 0x80 }  // POSIX_SPAWN_SETSID, hidden behind _GNU_SOURCE
        posix_spawnattr_setflags(&attributes, Int16(flags))

        let argv = ([executable] + arguments).map { strdup($0) } + [nil]
        let environmentStrings: [String] =
            environment.map { $0.map { "\($0.key)=\($0.value)" } }
            ?? ProcessInfo.processInfo.environment.map { "\($0.key)=\($0.value)" }
        let envp = environmentStrings.map { strdup($0) } + [nil]
        defer {
            for pointer in argv { free(pointer) }
            for pointer in envp { free(pointer) }
        }

        var pid = pid_t()
        let result = posix_spawn(&pid, executable, &actions, &attributes, argv, envp)
        guard result == 0 else {
            onFailure()
            throw ChildProcessError.call("posix_spawn \(executable)", result)
        }
        return pid
    }
}

/// glibc's `posix_spawn_file_actions_addclosefrom_np` (2.34), which Swift's Glibc module does not
/// show (it is declared under `_GNU_SOURCE`).
@_silgen_name("posix_spawn_file_actions_addclosefrom_np")
private func spawnActionsCloseFrom(_ actions: UnsafeMutablePointer<posix_spawn_file_actions_t>, _ from: CInt) -> CInt

/// The exit status of a child process, once it has one.
private final class ExitStatus: Sendable {
    private let state = Mutex<(status: Int32?, waiters: [CheckedContinuation<Int32, Never>])>((nil, []))

    var isSet: Bool { self.state.withLock { $0.status != nil } }

    func set(_ status: Int32) {
        let waiters = self.state.withLock { state in
            state.status = status
            defer { state.waiters = [] }
            return state.waiters
        }
        for waiter in waiters { waiter.resume(returning: status) }
    }

    func wait() async -> Int32 {
        await withCheckedContinuation { continuation in
            let status = self.state.withLock { state -> Int32? in
                if let status = state.status { return status }
                state.waiters.append(continuation)
                return nil
            }
            if let status { continuation.resume(returning: status) }
        }
    }
}
